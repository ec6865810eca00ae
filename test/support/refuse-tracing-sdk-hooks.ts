/** The module hooks of refuse-tracing-sdk.ts, run in the loader's thread. */
interface Resolved {
  url: string;
}
type NextResolve = (specifier: string, context: unknown) => Promise<Resolved>;

/** What tracing loads only when it is configured. */
const REFUSED = [/\/node_modules\/@opentelemetry\/(?!api\/)/, /\/src\/tracing\/otlp\.js$/];

export async function resolve(specifier: string, context: unknown, next: NextResolve): Promise<Resolved> {
  const resolved = await next(specifier, context);
  if (REFUSED.some((pattern) => pattern.test(resolved.url))) {
    throw new Error(`refused to load ${resolved.url}: the tracing SDK must not be loaded here`);
  }
  return resolved;
}
