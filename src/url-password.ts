/** Hides the password of a URL (`//user:***@host`, `?password=***`), for logs and error messages. */
export function maskUrlPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^/]*@/i, '$1***@').replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}
