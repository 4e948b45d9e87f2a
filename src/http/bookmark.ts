/**
 * D1 bookmarks: a position in the database's history, as D1 writes it (four groups of
 * lowercase hex, `00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683`). A client sends
 * the last one it was given in `X-D1-Bookmark` so that its read sees at least that state, even
 * when a read replica near it serves the read. Pure functions; the router applies them.
 */

export const BOOKMARK_HEADER = 'X-D1-Bookmark';

export const BOOKMARK_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$';
const BOOKMARK = new RegExp(BOOKMARK_PATTERN);

/** Whether `text` has a bookmark's shape (local D1 accepts anything, so the service checks). */
export const isBookmark = (text: string): boolean => BOOKMARK.test(text);

/** Reads sent by POST: a query carries its filter in a body. */
const POSTED_READ = /^\/workspaces\/[^/]+\/records\/query\/?$/;

/**
 * Where a request's reads start: the newer of the bookmark it sent and `floor` (this isolate's
 * last revocation), else any replica. A write's checks read the primary: a write refused on a
 * replica's older state (a record not there yet, a grant not seen) would be refused wrongly.
 */
export function sessionStart(method: string, path: string, sent: string | null, floor?: string): string {
  const reads = method === 'GET' || method === 'HEAD' || (method === 'POST' && POSTED_READ.test(path));
  if (!reads) return 'first-primary';
  return latestBookmark(sent, floor) ?? 'first-unconstrained';
}

/**
 * The newest of some bookmarks. Their groups are fixed-width hex, so text order is history's
 * order.
 */
export function latestBookmark(...bookmarks: readonly (string | null | undefined)[]): string | undefined {
  let latest: string | undefined;
  for (const bookmark of bookmarks) {
    if (bookmark === null || bookmark === undefined || !isBookmark(bookmark)) continue;
    if (latest === undefined || bookmark > latest) latest = bookmark;
  }
  return latest;
}
