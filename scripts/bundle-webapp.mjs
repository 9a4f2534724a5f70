// Bundles @tg-ingest/webapp's script entry with the client into the one minified file the service serves at
// /sdk/webapp.js. Run by the build, after tsc has built both packages.
import { build } from 'esbuild';

await build({
  entryPoints: ['integrations/webapp/dist/script.js'],
  outfile: 'integrations/webapp/dist/webapp.min.js',
  bundle: true,
  minify: true,
  format: 'iife',
  // Browsers of 2021 on (private class members run natively there, and their names minify): every messenger client
  // since has a web view at least this new.
  target: ['chrome91', 'edge91', 'firefox90', 'safari15', 'ios15'],
  legalComments: 'none',
  logLevel: 'warning',
});
