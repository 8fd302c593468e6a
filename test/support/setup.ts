import { disableAzureRegistration } from '../../shared/platform/functions.js';

// Handlers are called directly in tests; registering them with a Functions host that is not there only warns.
disableAzureRegistration();
process.env.LOG_LEVEL ??= 'warning';
