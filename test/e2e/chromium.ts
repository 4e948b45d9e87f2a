import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

/**
 * Headless Chromium driven over the Chrome DevTools Protocol: one tab, its scripts evaluated,
 * keys typed, files chosen and screenshots taken as a person's browser would. Debian's `chromium`
 * package (CI installs it).
 */

/** The browser's command, if one is installed. */
export const chromiumCommand = ['chromium', 'chromium-browser', 'google-chrome'].find(
  (name) => spawnSync(name, ['--version']).status === 0,
);

/**
 * Whether the browser tests run: wherever Chromium is installed, and always on CI (`CI=true`), where
 * a missing browser fails them instead of skipping them. Elsewhere `npm test` skips them and says so
 * at its end (test/tools/run-notes.ts).
 */
export const browserTestsRun = chromiumCommand !== undefined || process.env.CI === 'true';

export interface Tab {
  /** Sends one DevTools command to the tab. */
  send<T = any>(method: string, params?: Record<string, unknown>): Promise<T>;
  /** The value of `expression` (awaited) in the page. */
  evaluate<T = any>(expression: string): Promise<T>;
  /** Polls `expression` until it is truthy, then answers its value; fails with `what` after `timeoutMs`. */
  waitFor<T = any>(expression: string, what: string, timeoutMs?: number): Promise<T>;
  /** Focuses the element `selector` names and types `text` into it, as a keyboard would. */
  type(selector: string, text: string): Promise<void>;
  /** Presses a key (`Enter`, `Tab`) in the focused element. */
  press(key: keyof typeof KEYS): Promise<void>;
  /** Nodes of the accessibility tree with this role and accessible name (what a screen reader announces). */
  accessible(role: string, name: string): Promise<{ role: string; name: string }[]>;
  close(): Promise<void>;
}

const KEYS = {
  Enter: { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, text: '\r' },
  Tab: { key: 'Tab', code: 'Tab', windowsVirtualKeyCode: 9 },
  Escape: { key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 },
  ArrowLeft: { key: 'ArrowLeft', code: 'ArrowLeft', windowsVirtualKeyCode: 37 },
  ArrowUp: { key: 'ArrowUp', code: 'ArrowUp', windowsVirtualKeyCode: 38 },
  ArrowRight: { key: 'ArrowRight', code: 'ArrowRight', windowsVirtualKeyCode: 39 },
  ArrowDown: { key: 'ArrowDown', code: 'ArrowDown', windowsVirtualKeyCode: 40 },
};

/** Starts headless Chromium with a fresh profile and opens one tab on `url`. */
export async function openTab(url: string, width = 1280, height = 900): Promise<Tab> {
  if (chromiumCommand === undefined) {
    throw new Error('headless Chromium is needed and none is installed: apt-get install -y chromium (Debian)');
  }
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  const child = spawn(
    chromiumCommand,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const endpoint = await new Promise<string>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`Chromium did not start: ${err}`)), 30_000);
    child.stderr?.on('data', (chunk) => {
      err += chunk;
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', () => reject(new Error(`Chromium exited: ${err}`)));
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    throw error;
  });
  const socket = new WebSocket(endpoint, { perMessageDeflate: false });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  let next = 1;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  socket.on('message', (raw) => {
    const message = JSON.parse(String(raw));
    const waiting = pending.get(message.id);
    if (waiting === undefined) return;
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(`${message.error.message} ${message.error.data ?? ''}`));
    else waiting.resolve(message.result);
  });
  const command = <T>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }));
    });
  const { targetId } = await command<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await command<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
  const send = <T = any>(method: string, params: Record<string, unknown> = {}) => command<T>(method, params, sessionId);
  await send('Page.enable');
  await send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
  await send('Page.navigate', { url });

  const evaluate = async <T = any>(expression: string): Promise<T> => {
    const { result, exceptionDetails } = await send('Runtime.evaluate', {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails !== undefined) {
      throw new Error(`${expression}: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    }
    return result.value as T;
  };
  const tab: Tab = {
    send,
    evaluate,
    async waitFor<T = any>(expression: string, what: string, timeoutMs = 20_000): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      let last: unknown;
      while (Date.now() < deadline) {
        try {
          last = await evaluate(expression);
          if (last) return last as T;
        } catch (error) {
          last = error;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const text = await evaluate<string>('document.querySelector("main")?.innerText ?? ""').catch(() => '');
      throw new Error(`waited ${timeoutMs} ms for ${what} (last: ${String(last)}); the page shows:\n${text}`);
    },
    async type(selector: string, text: string): Promise<void> {
      await evaluate(`(() => { const el = document.querySelector(${JSON.stringify(selector)});
        if (!el) throw new Error('no ' + ${JSON.stringify(selector)}); el.focus(); el.select?.(); })()`);
      await send('Input.insertText', { text });
    },
    async press(key): Promise<void> {
      await send('Input.dispatchKeyEvent', { type: 'keyDown', ...KEYS[key] });
      await send('Input.dispatchKeyEvent', { type: 'keyUp', ...KEYS[key] });
    },
    async accessible(role: string, name: string) {
      const { result } = await send('Runtime.evaluate', { expression: 'document' });
      const { nodes } = await send('Accessibility.queryAXTree', {
        objectId: result.objectId,
        role,
        accessibleName: name,
      });
      return nodes.map((node: any) => ({ role: node.role?.value, name: node.name?.value }));
    },
    async close(): Promise<void> {
      socket.close();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      // Chromium's helper processes may still write to the profile as the browser exits: retry.
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
  return tab;
}
