// The benchmarks and the tests start Chromium the same way.
export { type Chromium, launchChromium } from '../../bench/lib/chromium.js';
