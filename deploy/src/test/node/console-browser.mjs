// Drives a real headless chromium through the operator console (the Java test that starts it runs the cluster): signs
// in as the operator, watches the cluster page while the test stops a worker, suspends and resumes a tenant, meets a
// transcript the operator may not read, then signs in as the tenant admin, reads a transcript, replays a dead letter
// and sees its answer arrive, and lists the audit. Progress goes to stdout as "STEP <text>" lines; the line
// "STOP_WORKER" asks the test to stop WORKER now; the last line is one JSON object with what was seen. Exits 1 on any
// failure, with the error on stderr.
//   CONSOLE_URL (http://127.0.0.1:PORT/console), OPERATOR_KEY, TENANT_KEY, TENANT_ID, OTHER_TENANT_ID, BOT, CHAT_OK,
//   CHAT_DEAD, DEAD_TEXT, WORKER, GATEWAY_NODE, CHROMIUM, SCREENSHOTS (a directory)
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

// axe-core checks each page against WCAG 2.1 A and AA. It is evaluated through the DevTools protocol, which the page's
// CSP does not govern, so the CSP stays as strict as it is served (a script tag would be refused by it).
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

function env(name, fallback) {
  const value = process.env[name] || fallback;
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

const consoleUrl = env('CONSOLE_URL');
const operatorKey = env('OPERATOR_KEY');
const tenantKey = env('TENANT_KEY');
const tenantId = env('TENANT_ID');
const otherTenantId = env('OTHER_TENANT_ID');
const bot = env('BOT', 'main');
const chatOk = env('CHAT_OK');
const chatDead = env('CHAT_DEAD');
const deadText = env('DEAD_TEXT');
const worker = env('WORKER', 'worker-2');
const gatewayNode = env('GATEWAY_NODE', 'gateway-1');
const screenshots = env('SCREENSHOTS');

const seen = {};
const hiddenChats = `/console/api/tenants/${encodeURIComponent(tenantId)}/bots/${encodeURIComponent(bot)}/chats/`;
const consoleErrors = [];
// A CSS attribute value, quoted: ids may hold characters that mean something in a selector.
const q = (value) => JSON.stringify(String(value));

function step(text) {
  console.log(`STEP ${text}`);
}

// Expected failures, which the browser logs as "Failed to load resource": the wrong key's 401, and the 403 of the
// transcript the operator may not read (step 4).
function expected(message) {
  const text = message.text();
  const url = (message.location() && message.location().url) || '';
  return text.includes('401')
    || (text.includes('403') && url.includes(hiddenChats));
}

// The WCAG 2.1 A/AA violations axe finds on the page as it is now, as "rule (impact): target" strings.
async function accessibility(page, name) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) {
    await page.evaluate(axeSource);
  }
  const { violations, passed } = await page.evaluate(async () => {
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return {
      violations: result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`),
      passed: result.passes.length,
    };
  });
  seen.accessibility = seen.accessibility || {};
  seen.accessibility[name] = violations;
  // rules that ran and passed: proof the check looked at something
  seen.accessibilityPassed = seen.accessibilityPassed || {};
  seen.accessibilityPassed[name] = passed;
}

// The cluster's 64 partition rows make a very tall page: those shots keep to the window.
async function shot(page, name, fullPage = true) {
  await page.screenshot({ path: join(screenshots, name), fullPage });
}

// Waits for a page of the console to be shown with its data: <section data-page=... data-state=ready>.
async function ready(page, name, timeout = 20000) {
  await page.locator(`section[data-page=${q(name)}][data-state="ready"]`).waitFor({ timeout });
}

function tenantNavLink(page, name) {
  return page.locator('nav[data-nav="tenant"]').getByRole('link', { name, exact: true });
}

// The chats page of the current bot: search for the chat, wait for the results of that search, open its transcript.
async function openChat(page, chatKey) {
  await ready(page, 'chats');
  await page.getByLabel('Search chats', { exact: true }).fill(chatKey);
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.locator(`section[data-page="chats"][data-state="ready"][data-query=${q(chatKey)}]`).waitFor({ timeout: 20000 });
  await page.locator(`tr[data-chat=${q(chatKey)}] a`).first().click({ timeout: 20000 });
  await page.locator('section[data-page="transcript"]').waitFor({ timeout: 20000 });
}

// What the cluster page shows: member node ids, and [partition, owner] of every partition row.
function clusterRows(page) {
  return page.evaluate(() => ({
    members: [...document.querySelectorAll('section[data-page="cluster"] tr[data-node]')].map((row) => row.dataset.node),
    partitions: [...document.querySelectorAll('section[data-page="cluster"] tr[data-partition]')]
      .map((row) => [Number(row.dataset.partition), row.dataset.owner]),
  }));
}

function ownerCounts(partitions) {
  const counts = {};
  for (const [, owner] of partitions) {
    if (owner) {
      counts[owner] = (counts[owner] || 0) + 1;
    }
  }
  return counts;
}

let browser;
try {
  mkdirSync(screenshots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(20000);
  page.on('console', (message) => {
    if (message.type() === 'error' && !expected(message)) consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));

  step('1 sign in: a wrong key, then the operator key with the keyboard');
  await page.goto(consoleUrl);
  const keyInput = page.getByLabel('Key', { exact: true });
  await keyInput.waitFor({ timeout: 20000 });
  const boot = await page.evaluate(() => window.__consoleBoot);
  await shot(page, 'console-login.png');
  await accessibility(page, 'login');
  await keyInput.fill(`wrong-${Date.now()}`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const refused = await page.waitForFunction(() => {
    const alert = document.querySelector('[data-login-error][role="alert"]');
    return alert && alert.textContent.trim();
  }, null, { timeout: 20000 });
  seen.wrongKeyAlert = await refused.jsonValue();
  await keyInput.focus();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type(operatorKey);
  await page.keyboard.press('Enter');
  await page.locator('section[data-page="cluster"]').waitFor({ timeout: 20000 });

  step('2 cluster: both nodes own partitions; STOP_WORKER; the worker goes and the gateway owns them all');
  await page.waitForFunction(([gateway, stopped]) => {
    const nodes = [...document.querySelectorAll('section[data-page="cluster"] tr[data-node]')]
      .map((row) => row.dataset.node);
    const owners = new Set([...document.querySelectorAll('section[data-page="cluster"] tr[data-partition]')]
      .map((row) => row.dataset.owner));
    return nodes.includes(gateway) && nodes.includes(stopped) && owners.has(gateway) && owners.has(stopped);
  }, [gatewayNode, worker], { timeout: 90000, polling: 250 });
  const before = await clusterRows(page);
  seen.membersBefore = before.members;
  seen.ownersBefore = ownerCounts(before.partitions);
  await shot(page, 'console-cluster.png', false);
  await accessibility(page, 'cluster');
  // Mark a partition's row: repainted in place, the same element is still there after the partitions moved.
  await page.evaluate(() => { document.querySelector('section[data-page="cluster"] tr[data-partition="0"]').consoleMark = true; });
  await new Promise((resolve) => process.stdout.write('STOP_WORKER\n', resolve));
  await page.waitForFunction(([gateway, stopped]) => {
    const nodes = [...document.querySelectorAll('section[data-page="cluster"] tr[data-node]')]
      .map((row) => row.dataset.node);
    const owners = [...document.querySelectorAll('section[data-page="cluster"] tr[data-partition]')]
      .map((row) => row.dataset.owner);
    return !nodes.includes(stopped) && owners.length > 0 && owners.every((owner) => owner === gateway);
  }, [gatewayNode, worker], { timeout: 120000, polling: 250 });
  const after = await clusterRows(page);
  seen.membersAfter = after.members;
  seen.ownersAfter = ownerCounts(after.partitions);
  const ownerAfter = new Map(after.partitions);
  const moved = before.partitions
    .find(([partition, owner]) => owner === worker && ownerAfter.get(partition) === gatewayNode);
  if (!moved) {
    throw new Error(`no partition moved from ${worker} to ${gatewayNode}: ${JSON.stringify({ before, after })}`);
  }
  seen.movedPartition = moved[0];
  seen.rowsKeptInPlace = await page.evaluate(
    () => document.querySelector('section[data-page="cluster"] tr[data-partition="0"]').consoleMark === true);
  // The partitions just taken over are listed as rebalances (claimed within the last ten minutes).
  seen.rebalanced = await page.$$eval('section[data-page="cluster"] tr[data-moved]',
    (rows) => rows.flatMap((row) => row.dataset.moved.split(' ').map(Number)));
  await shot(page, 'console-rebalanced.png', false);

  step('3 tenants: suspend and resume the other tenant');
  const tenantsLink = page.locator('nav[data-nav="main"]').getByRole('link', { name: 'Tenants', exact: true });
  await tenantsLink.focus();
  await page.keyboard.press('Enter');
  await ready(page, 'tenants');
  const other = page.locator(`tr[data-tenant=${q(otherTenantId)}]`);
  await other.getByRole('button', { name: 'Suspend', exact: true }).click({ timeout: 20000 });
  await page.locator(`tr[data-tenant=${q(otherTenantId)}][data-status="suspended"]`).waitFor({ timeout: 20000 });
  await other.getByRole('button', { name: 'Resume', exact: true }).click({ timeout: 20000 });
  await page.locator(`tr[data-tenant=${q(otherTenantId)}][data-status="active"]`).waitFor({ timeout: 20000 });
  seen.suspendResume = true;
  await shot(page, 'console-tenants.png');
  await accessibility(page, 'tenants');

  step('4 operator: the transcript of a tenant is hidden');
  await page.locator(`tr[data-tenant=${q(tenantId)}]`).getByRole('link', { name: 'Open', exact: true }).click();
  await ready(page, 'bots');
  await page.locator(`section[data-page="bots"] tr[data-bot=${q(bot)}] a`).first().click();
  await openChat(page, chatOk);
  await page.locator('section[data-page="transcript"] [data-content-hidden]').waitFor({ timeout: 20000 });
  seen.operatorContentHidden = true;

  step('5 tenant admin: sign in, open a transcript');
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await keyInput.waitFor({ timeout: 20000 });
  await keyInput.fill(tenantKey);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await ready(page, 'bots');
  await page.locator(`section[data-page="bots"] tr[data-bot=${q(bot)}] a`).first().click();
  await openChat(page, chatOk);
  await ready(page, 'transcript');
  await page.locator('section[data-page="transcript"] li[data-role]').first().waitFor({ timeout: 20000 });
  seen.transcript = await page.$$eval('section[data-page="transcript"] li[data-role="user"], '
    + 'section[data-page="transcript"] li[data-role="assistant"]', (items) => items.map((item) =>
    `${item.dataset.role}:${item.querySelector('[data-text]') ? item.querySelector('[data-text]').textContent : ''}`));
  await shot(page, 'console-transcript.png');
  await accessibility(page, 'transcript');

  step('6 dead letters: replay one, its answer arrives in the chat');
  await tenantNavLink(page, 'Dead letters').click();
  await ready(page, 'dead-letters');
  const found = await page.waitForFunction((text) => {
    const rows = [...document.querySelectorAll('section[data-page="dead-letters"] tr[data-dead-letter]')]
      .filter((row) => row.querySelector('[data-col="text"]').textContent === text);
    const row = rows.find((r) => r.dataset.replayed === 'false') || rows[0];
    return row ? row.dataset.deadLetter : null;
  }, deadText, { timeout: 30000, polling: 250 });
  seen.deadLetterId = await found.jsonValue();
  const letter = `tr[data-dead-letter=${q(seen.deadLetterId)}]`;
  await page.locator(letter).getByRole('button', { name: 'Replay', exact: true }).click();
  await page.locator(`${letter}[data-replayed="true"]`).waitFor({ timeout: 30000 });
  await shot(page, 'console-dead-letters.png');
  await accessibility(page, 'dead-letters');
  // The letter's own link to its chat; the chats list is the way round, should the letter not name it.
  const letterChat = page.locator(`${letter} a`, { hasText: chatDead });
  if (await letterChat.count()) {
    await letterChat.first().click();
    await page.locator('section[data-page="transcript"]').waitFor({ timeout: 20000 });
  } else {
    await tenantNavLink(page, 'Chats').click();
    await openChat(page, chatDead);
  }
  const answer = await page.waitForFunction((expectedText) => {
    const texts = [...document.querySelectorAll('section[data-page="transcript"] li[data-role="assistant"] [data-text]')]
      .map((node) => node.textContent);
    return texts.find((text) => text === expectedText) || null;
  }, `echo: ${deadText}`, { timeout: 60000, polling: 250 });
  seen.replayAnswer = await answer.jsonValue();

  step('7 audit');
  await tenantNavLink(page, 'Audit').click();
  await ready(page, 'audit');
  await page.locator('section[data-page="audit"] tr[data-type]').first().waitFor({ timeout: 10000 }).catch(() => {});
  seen.auditTypes = await page.$$eval('section[data-page="audit"] tr[data-type]',
    (rows) => [...new Set(rows.map((row) => row.dataset.type))]);
  await shot(page, 'console-audit.png');
  await accessibility(page, 'audit');

  step('8 done');
  seen.noReload = (await page.evaluate(() => window.__consoleBoot)) === boot;
  seen.consoleErrors = consoleErrors;
  console.log(JSON.stringify(seen));
} catch (error) {
  console.error(error && error.stack ? error.stack : String(error));
  console.error(`seen so far: ${JSON.stringify({ ...seen, consoleErrors })}`);
  process.exitCode = 1;
} finally {
  if (browser) {
    await browser.close();
  }
}
