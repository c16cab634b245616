// Drives a real headless chromium through the web chat widget (WebChatBrowserTest): opens the site's page, sends a
// message, sees the reply streamed in and then committed, reloads the page and sees the history. Prints one JSON line
// with what it saw; exits non-zero on any failure.
//   PAGE_URL   the page with the widget's script tag
//   CHROMIUM   the browser's executable
import { chromium } from 'playwright-core';

const pageUrl = process.env.PAGE_URL;
const question = process.env.QUESTION || 'hello from the browser';
const seen = {};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
try {
  const page = await browser.newPage();
  const consoleErrors = [];
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));

  await page.goto(pageUrl);
  // Playwright's CSS selectors go into open shadow roots: the widget's own elements are reachable as a user sees them.
  await page.click('.launcher');
  await page.waitForSelector('[data-clawfleet-chat][data-status="connected"]', { state: 'attached', timeout: 20000 });
  await page.fill('textarea', question);
  await page.keyboard.press('Enter');

  const reply = page.locator('.msg[data-role=assistant][data-seq]');
  await reply.first().waitFor({ timeout: 30000 });
  seen.reply = await reply.first().textContent();
  seen.deltas = Number(await reply.first().getAttribute('data-deltas') || 0);
  seen.userAcked = await page.locator('.msg[data-role=user][data-seq]').count();
  seen.streamedThenCommitted = (await reply.first().getAttribute('data-streaming')) === 'false';

  await page.reload();
  await page.click('.launcher');
  await page.locator('.msg[data-role=assistant][data-seq]').first().waitFor({ timeout: 20000 });
  seen.history = await page.$$eval('[data-clawfleet-chat]', (hosts) =>
    Array.from(hosts[0].shadowRoot.querySelectorAll('.msg')).map((el) => el.getAttribute('data-role') + ':' + el.textContent));
  seen.consoleErrors = consoleErrors;
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
