/**
 * Who may see the served dashboard: whoever holds its access token. The URL
 * printed at start carries it (`?token=`); that first visit trades it for a
 * cookie (HttpOnly, SameSite=Strict, so no other site's page can ride on it)
 * and is redirected to the same page without it, so the token leaves the
 * address bar. Scripts may send `Authorization: Bearer TOKEN` instead.
 * No token: 401. A wrong one: 403. Nothing (page, assets, API) is served
 * before the check.
 *
 * And what it may do: with writes off, every request but GET and HEAD is
 * refused with 403 here, whatever the board would have done with it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';

/** Bytes of a generated token: 256 bits. */
const TOKEN_BYTES = 32;
const TOKEN_PARAM = 'token';

/** A new access token, URL-safe. */
export function newAccessToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * Cookies are per host, not per port: the cookie is named after (a digest
 * of) the token, so two dashboards on one machine keep theirs apart.
 */
export function cookieName(token: string): string {
  return `leasehold_dashboard_${digest(token).toString('hex').slice(0, 16)}`;
}

/** Compares in constant time (through digests, as timingSafeEqual needs equal lengths). */
function sameToken(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
}

function bearer(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
  return match?.[1];
}

/** The token check, before everything else. */
export function requireToken(token: string): MiddlewareHandler {
  const cookie = cookieName(token);
  return async (c, next) => {
    const fromUrl = c.req.query(TOKEN_PARAM);
    const given = fromUrl ?? bearer(c.req.header('authorization')) ?? getCookie(c, cookie);
    if (given === undefined) {
      return c.text('This leasehold dashboard needs its access token: open the URL it printed at start (…/?token=…).\n', 401);
    }
    if (!sameToken(given, token)) return c.text('Wrong access token for this leasehold dashboard.\n', 403);
    if (fromUrl !== undefined && c.req.method === 'GET') {
      setCookie(c, cookie, token, { httpOnly: true, sameSite: 'Strict', path: '/' });
      const url = new URL(c.req.url);
      url.searchParams.delete(TOKEN_PARAM);
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    await next();
  };
}

/** Refuses every request that could change something (anything but GET and HEAD). */
export function refuseWrites(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      return c.json({ error: 'This leasehold dashboard is read-only: start it with --allow-writes to act on jobs.' }, 403);
    }
    await next();
  };
}
