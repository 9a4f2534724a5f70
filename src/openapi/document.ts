// The OpenAPI 3.1 document served at GET /openapi.json. It is assembled from the code's own tables: the
// operations the wings declare beside their routes (src/wings/*/), error codes and statuses from src/base/errors.ts, diagnostic codes and severities from
// src/pipeline/diagnostics.ts, limits and patterns from the pipeline; test/e2e/openapi.test.ts
// checks real responses of the running service against it.
import { ERRORS } from '../base/errors.js';
import { documentedPath, httpMethod, type Route } from '../http/route.js';
import { DIAGNOSTICS } from '../pipeline/diagnostics.js';
import { componentHeaders, componentParameters, securitySchemes } from './operations.js';
import { componentSchemas, DIAGNOSTIC_CODES, ERROR_CODES, type Schema, severitiesOf } from './schemas.js';

const DESCRIPTION = `Ingestion of analytics events from a messenger's mini-apps (the webapp endpoint, \`POST /tg/webapp\`)
and bot backends (the bot_api endpoint, \`POST /tg\`) into PostgreSQL, and the admin API that provisions projects,
bots and tokens, and looks after event quality (tracking plans, the quarantine, replay, the live view). A \`202\`
means the events are committed.

Every response carries \`X-Request-Id\`, except the answers of the live view's WebSocket upgrade (\`GET /admin/live\`:
its 101 and its 400). Errors are \`{error, message, details?}\` with \`error\` one of \`x-error-codes\`; the ingestion
body lists diagnostics whose \`code\` is one of \`x-diagnostic-codes\`, each with its severity, or both severities
for the codes of a tracking plan, whose severity the project's plan decides. An unknown path answers 404 \`not_found\`.`;

/** Every documented route as an OpenAPI path item, in the order of the routes. */
function paths(routes: readonly Route[]): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    if (r.operation === undefined) {
      // Only a fallback (405, 404) goes undocumented: it answers on paths of routes that are.
      if (r.method === 'any') continue;
      throw new Error(`${httpMethod(r)} ${r.path} has no operation`);
    }
    const item = (out[documentedPath(r)] ??= {});
    if (item[httpMethod(r)] !== undefined) throw new Error(`${httpMethod(r)} ${documentedPath(r)} is declared twice`);
    item[httpMethod(r)] = r.operation;
  }
  return out;
}

/** The document of the routes, and of the component schemas their operations name (besides errors and diagnostics). */
export function openApiDocument(routes: readonly Route[], schemas: Record<string, Schema>): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: { title: 'tg-ingest', version: '1', description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    tags: [
      {
        name: 'ingestion',
        description: 'The webapp endpoint (mini-app code) and the bot_api endpoint (bot backends).',
      },
      {
        name: 'admin',
        description:
          'Provisioning, usage, reports and event quality; `Authorization: Bearer <ADMIN_TOKEN>` (the live view: the token in its first WebSocket message).',
      },
      { name: 'operations', description: 'Probes, metrics, this document and the admin page.' },
    ],
    paths: paths(routes),
    components: {
      schemas: componentSchemas(schemas),
      headers: componentHeaders(),
      parameters: componentParameters(),
      securitySchemes: securitySchemes(),
    },
    'x-error-codes': Object.fromEntries(
      ERROR_CODES.map((c) => [c, { status: ERRORS[c].status, message: ERRORS[c].message }]),
    ),
    // One severity per code, or both (["warning", "error"]) for the codes whose severity a tracking plan decides.
    'x-diagnostic-codes': Object.fromEntries(
      DIAGNOSTIC_CODES.map((c) => {
        const s = severitiesOf(c);
        return [c, { severity: s.length === 1 ? s[0] : s, description: DIAGNOSTICS[c].description }];
      }),
    ),
  };
}
