/**
 * Where a request says it was sent: the Host header and the scheme, as the browser saw them.
 * The CSRF check compares a request's `Origin` with this, and the connection info shows it.
 */
import type { FastifyRequest } from 'fastify';

/** The Host header as sent (`example.com:8080`, `[::1]:8080`); empty when there was none. */
export function hostHeader(req: FastifyRequest): string {
  return req.headers.host ?? '';
}

/** `example.com:8080` → `example.com`; `[::1]:8080` → `::1`; `::1` stays `::1`. */
export function hostName(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end < 0 ? host.slice(1) : host.slice(1, end);
  }
  // More than one colon without brackets is a bare IPv6 address, not host:port.
  const colon = host.indexOf(':');
  return colon >= 0 && colon === host.lastIndexOf(':') ? host.slice(0, colon) : host;
}

/**
 * The origins this request may legitimately come from: `<protocol>://<Host>`, and the https one
 * as well when the operator said TLS is terminated in front of us (`cookieSecure`), since the
 * server then sees plain HTTP while the browser's Origin says https.
 */
export function ownOrigins(req: FastifyRequest, httpsInFront: boolean): string[] {
  const host = hostHeader(req).toLowerCase();
  const origins = [`${req.protocol}://${host}`];
  if (httpsInFront && req.protocol !== 'https') origins.push(`https://${host}`);
  return origins;
}
