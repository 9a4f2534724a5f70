// The benchmarks and the tests host mini-apps the same way.
export { launchFragment, type MiniAppPages, startMiniAppPages } from '../../bench/lib/miniapp-pages.js';
