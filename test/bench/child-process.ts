import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * A TypeScript module in a child process of its own (tsx's loader), `env` added to this process's environment; messages
 * go by IPC with the structured clone algorithm.
 */
export function forkTypeScript(module: URL, env: Record<string, string>): ChildProcess {
  return fork(fileURLToPath(module), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, ...env }, serialization: 'advanced' });
}
