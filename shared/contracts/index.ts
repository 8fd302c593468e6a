export * from './ids.js';
export * from './events.js';
export * from './turns.js';
export * from './sessions.js';
export * from './interactions.js';
export * from './context.js';
export * from './problem.js';
export * from './service-bus.js';
