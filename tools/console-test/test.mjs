// Headless-Chromium test of the whirl live web console.
//
//   node test.mjs <url> <screenshot.png>
//
// Passes when the page at <url> renders at least one group (section.group) with a non-empty
// name and its three charts (queue, rates, latency), the charts of the first group move (their
// data-last-t changes and grows) within 5 s, the header status says "live", the page threw no
// uncaught error, no request failed with HTTP >= 400, and, when <url> carries ?token=, every
// request the page made carried it too. Saves a full-page screenshot either way.
// Exit 0 = PASS, 1 = FAIL, 2 = usage.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const [url, shotArg] = process.argv.slice(2);
if (!url || !shotArg) {
  console.error('usage: node test.mjs <url> <screenshot.png>');
  process.exit(2);
}
const shot = resolve(shotArg);
const CHARTS = ['queue', 'rates', 'latency'];
const WHOLE_TEST_MS = 28_000;
const CHANGE_MS = 5_000;

const hardStop = setTimeout(() => {
  console.error(`FAIL: the test did not finish within ${WHOLE_TEST_MS / 1000} s`);
  process.exit(1);
}, WHOLE_TEST_MS);

const problems = [];   // failures found along the way
const pageErrors = [];
const badResponses = [];
const requests = [];
let browser;
let page;

function fail(msg) {
  const e = new Error(msg);
  e.testFailure = true;
  throw e;
}

async function chartState(p) {
  return p.evaluate((charts) => {
    const g = document.querySelector('section.group');
    if (!g) return null;
    const out = {};
    for (const c of charts) {
      const svg = g.querySelector(`svg[data-chart="${c}"]`);
      out[c] = svg ? { points: svg.getAttribute('data-points'), lastT: svg.getAttribute('data-last-t') } : null;
    }
    return out;
  }, CHARTS);
}

let exitCode = 1;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 15_000,
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(8_000);
  page.on('pageerror', (e) => pageErrors.push(String(e && e.message || e)));
  page.on('request', (r) => requests.push(r.url()));
  page.on('response', (r) => { if (r.status() >= 400) badResponses.push(`${r.status()} ${r.url()}`); });

  const resp = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 10_000 });
  if (!resp || !resp.ok()) fail(`GET ${url} answered ${resp ? resp.status() : 'nothing'}`);

  // 1. groups with a name and three charts
  try {
    await page.waitForSelector('section.group', { timeout: 8_000 });
  } catch {
    const err = await page.$eval('#error', (e) => (e.hidden ? '' : e.textContent)).catch(() => '');
    fail(`no section.group rendered within 8 s${err ? ` (page says: ${err})` : ''}`);
  }
  const groups = await page.$$eval('section.group', (ss) => ss.map((s) => ({
    name: (s.querySelector('.group-name')?.textContent || '').trim(),
    data: s.getAttribute('data-group'),
    charts: s.querySelectorAll('svg[data-chart][data-points]').length,
  })));
  if (!groups.length) fail('no section.group');
  groups.forEach((g, i) => {
    if (!g.name) problems.push(`group #${i} has an empty name`);
    if (g.charts < 3) problems.push(`group "${g.name}" has ${g.charts} charts, expected 3`);
  });
  const before = await chartState(page);
  for (const c of CHARTS) if (!before[c]) fail(`the first group has no "${c}" chart (svg[data-chart="${c}"])`);

  // 2. the charts move: every chart's data-last-t changes to a later time
  try {
    await page.waitForFunction(({ charts, before }) => {
      const g = document.querySelector('section.group');
      if (!g) return false;
      return charts.every((c) => {
        const svg = g.querySelector(`svg[data-chart="${c}"]`);
        const t = svg && svg.getAttribute('data-last-t');
        return t && t !== before[c].lastT && (before[c].lastT === '' || Number(t) > Number(before[c].lastT));
      });
    }, { charts: CHARTS, before }, { timeout: CHANGE_MS, polling: 100 });
  } catch {
    const now = await chartState(page);
    fail(`charts did not change within ${CHANGE_MS / 1000} s: before ${JSON.stringify(before)}, now ${JSON.stringify(now)}`);
  }
  const after = await chartState(page);
  for (const c of CHARTS) {
    if (!(Number(after[c].points) > 0)) problems.push(`chart "${c}" draws ${after[c].points} points`);
  }

  // 3. the header says live
  try {
    await page.waitForFunction(() => document.querySelector('#status')?.textContent.trim() === 'live',
      null, { timeout: 3_000 });
  } catch {
    const st = await page.$eval('#status', (e) => e.textContent.trim()).catch(() => '(no #status)');
    problems.push(`header status is "${st}", expected "live"`);
  }

  // 4. API text is never parsed as HTML: the page itself creates no img/iframe/object/embed
  //    and only its own two scripts (the inline loader and app.js)
  const foreign = await page.evaluate(() => ({
    elements: document.querySelectorAll('img, iframe, object, embed, svg foreignObject').length,
    scripts: document.querySelectorAll('script').length,
  }));
  if (foreign.elements > 0 || foreign.scripts > 2) {
    problems.push(`the page holds elements it never creates (${JSON.stringify(foreign)}): API text parsed as HTML?`);
  }

  // 5. token: every request carries the page's token
  const token = new URL(url).searchParams.get('token');
  if (token !== null) {
    const origin = new URL(url).origin;
    const missing = requests.filter((r) => {
      if (!r.startsWith(origin)) return false;
      return new URL(r).searchParams.get('token') !== token;
    });
    if (missing.length) problems.push(`requests without the token: ${missing.join(', ')}`);
  }
  if (pageErrors.length) problems.push(`uncaught page errors: ${pageErrors.join(' | ')}`);
  if (badResponses.length) problems.push(`failed requests: ${[...new Set(badResponses)].join(', ')}`);

  if (problems.length) fail(problems.join('\n      '));

  const fmt = (s) => CHARTS.map((c) => `${c} ${s[c].points} pts @${s[c].lastT}`).join(', ');
  console.log(`PASS: ${groups.length} group(s): ${groups.map((g) => JSON.stringify(g.name)).join(', ')}`);
  console.log(`      before: ${fmt(before)}`);
  console.log(`      after:  ${fmt(after)}`);
  console.log(`      status live; ${requests.length} requests${token !== null ? ', all with the token' : ''}`);
  exitCode = 0;
} catch (e) {
  console.error(`FAIL: ${(e && e.message) || e}`);
  exitCode = 1;
} finally {
  if (page) {
    try {
      mkdirSync(dirname(shot), { recursive: true });
      await page.screenshot({ path: shot, fullPage: true, timeout: 8_000 });
      console.log(`      screenshot: ${shot}`);
    } catch (e) {
      console.error(`could not save the screenshot: ${e.message}`);
      exitCode = 1;
    }
  }
  if (browser) await browser.close().catch(() => {});
  clearTimeout(hardStop);
  console.log(exitCode === 0 ? 'console: 1 passed, 0 failed' : 'console: 0 passed, 1 failed');
}
process.exit(exitCode);
