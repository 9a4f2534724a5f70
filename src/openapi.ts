// The OpenAPI 3.1 document served at GET /openapi.json. It is assembled from the code's own tables:
// error codes and statuses from src/errors.ts, diagnostic codes and severities from
// src/pipeline/diagnostics.ts, limits and patterns from the pipeline; test/e2e/openapi.test.ts
// checks real responses of the running service against it.
import { ERRORS } from './errors.js';
import { DIAGNOSTICS } from './pipeline/diagnostics.js';
import { componentHeaders, componentParameters, securitySchemes } from './openapi/operations.js';
import { paths } from './openapi/paths.js';
import { componentSchemas, DIAGNOSTIC_CODES, ERROR_CODES } from './openapi/schemas.js';

const DESCRIPTION = `Ingestion of analytics events from a messenger's mini-apps (the webapp endpoint, \`POST /tg/webapp\`)
and bot backends (the bot_api endpoint, \`POST /tg\`) into PostgreSQL, and the admin API that provisions projects,
bots and tokens. A \`202\` means the events are committed.

Every response carries \`X-Request-Id\`. Errors are \`{error, message, details?}\` with \`error\` one of
\`x-error-codes\`; the ingestion body lists diagnostics whose \`code\` is one of \`x-diagnostic-codes\`.
An unknown path answers 404 \`not_found\`.`;

let cached: Record<string, unknown> | null = null;

export function openApiDocument(): Record<string, unknown> {
  cached ??= {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: { title: 'tg-ingest', version: '1', description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    tags: [
      { name: 'ingestion', description: 'The webapp endpoint (A, mini-app code) and the bot_api endpoint (B, bot backends).' },
      { name: 'admin', description: 'Provisioning, usage and reports; `Authorization: Bearer <ADMIN_TOKEN>`.' },
      { name: 'operations', description: 'Probes, metrics, this document and the admin page.' },
    ],
    paths: paths(),
    components: {
      schemas: componentSchemas(),
      headers: componentHeaders(),
      parameters: componentParameters(),
      securitySchemes: securitySchemes(),
    },
    'x-error-codes': Object.fromEntries(ERROR_CODES.map((c) => [c, { status: ERRORS[c].status, message: ERRORS[c].message }])),
    'x-diagnostic-codes': Object.fromEntries(DIAGNOSTIC_CODES.map((c) => [c, { severity: DIAGNOSTICS[c].severity, description: DIAGNOSTICS[c].description }])),
  };
  return cached;
}
