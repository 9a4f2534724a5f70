// The component schemas of the probes.
import { closed, type Schema } from '../../openapi/schemas.js';

export function operationsSchemas(): Record<string, Schema> {
  return {
    Health: closed({ status: { type: 'string', const: 'ok' } }),
    Readiness: closed({
      status: {
        type: 'string',
        enum: ['ready', 'shutting_down', 'migrations_pending', 'database_unreachable'],
        description: '`ready` with 200, any other value with 503.',
      },
    }),
  };
}
