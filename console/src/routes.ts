/**
 * The console's views, by the URL's fragment (`#/subscriptions/<uuid>`): the page is one file,
 * so every view has its own address without the server knowing of it.
 */

export type Route =
  | { view: 'list' }
  | { view: 'new'; jsonpath: string | undefined }
  | { view: 'detail'; uuid: string }
  | { view: 'edit'; uuid: string }
  | { view: 'tester'; subscription: string | undefined; delivery: string | undefined; jsonpath: string | undefined }
  | { view: 'missing' };

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const parameters = new URLSearchParams(query);
  const parameter = (name: string) => parameters.get(name) ?? undefined;
  const parts = path.split('/').filter((part) => part !== '');
  if (parts.length === 0) return { view: 'list' };
  const [first, second, third] = parts.map((part) => decodeURIComponent(part));
  if (first === 'new' && parts.length === 1) return { view: 'new', jsonpath: parameter('jsonpath') };
  if (first === 'tester' && parts.length === 1) {
    return { view: 'tester', subscription: parameter('subscription'), delivery: parameter('delivery'), jsonpath: parameter('jsonpath') };
  }
  if (first === 'subscriptions' && second !== undefined) {
    if (parts.length === 2) return { view: 'detail', uuid: second };
    if (parts.length === 3 && third === 'edit') return { view: 'edit', uuid: second };
  }
  return { view: 'missing' };
}

const query = (parameters: Record<string, string | undefined>) => {
  const given = Object.entries(parameters).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '');
  return given.length === 0 ? '' : `?${new URLSearchParams(given).toString()}`;
};

export const href = {
  list: '#/',
  create: (jsonpath?: string) => `#/new${query({ jsonpath })}`,
  detail: (uuid: string) => `#/subscriptions/${encodeURIComponent(uuid)}`,
  edit: (uuid: string) => `#/subscriptions/${encodeURIComponent(uuid)}/edit`,
  tester: (parameters: { subscription?: string; delivery?: string; jsonpath?: string } = {}) => `#/tester${query(parameters)}`,
};

export function navigate(to: string): void {
  window.location.hash = to;
}
