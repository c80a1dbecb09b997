/** One scrape of GET /metrics, parsed: each sample's value by its series (`name{label="value",…}` as written, labels sorted). */
export type Samples = Map<string, number>;

export async function scrape(baseUrl: string, token?: string): Promise<Samples> {
  const response = await fetch(`${baseUrl}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /metrics: ${response.status} ${text}`);
  return parseMetrics(text);
}

/** The Prometheus text format (exposition format 0.0.4), as prom-client writes it. */
export function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, labels = "", value] = match;
    samples.set(series(name as string, labelsOf(labels)), Number(value));
  }
  return samples;
}

function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [, key, value] of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
    labels[key as string] = (value as string).replace(/\\(.)/g, "$1");
  return labels;
}

function series(name: string, labels: Record<string, string>): string {
  const keys = Object.keys(labels).sort();
  return keys.length === 0 ? name : `${name}{${keys.map((key) => `${key}="${labels[key]}"`).join(",")}}`;
}

/** A sample's value; 0 for a series not (yet) written, as Prometheus' counters start. */
export function sampleOf(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  return samples.get(series(name, labels)) ?? 0;
}

/** How much a sample grew between two scrapes. */
export function grew(before: Samples, after: Samples, name: string, labels: Record<string, string> = {}): number {
  return sampleOf(after, name, labels) - sampleOf(before, name, labels);
}
