/** How `npm start` runs the service: node's arguments before the entry point, the entry point, and the environment it sets. */
export interface StartCommand {
  nodeArgs: string[];
  entry: string;
  env: Record<string, string>;
}

/**
 * Reads package.json's start script, `NAME=${NAME:-value} … node ARGS… ENTRY`:
 * each variable with its default, node's arguments, and the entry point
 * (its last word), so that the bench runs the service as `npm start`
 * does, with one list of flags to keep.
 */
export function startCommand(script: string): StartCommand {
  const words = script.trim().split(/\s+/);
  const node = words.indexOf("node");
  if (node < 0 || words.length < node + 2 || !words.at(-1)?.endsWith(".js"))
    throw new Error(`the start script does not run node with a .js entry point as its last word: ${script}`);
  const env: Record<string, string> = {};
  for (const word of words.slice(0, node)) {
    const match = /^(\w+)=\$\{\1:-([^}]*)\}$/.exec(word);
    if (!match) throw new Error(`the start script sets ${word}, not NAME=\${NAME:-value}`);
    env[match[1] as string] = match[2] as string;
  }
  return { nodeArgs: words.slice(node + 1, -1), entry: words.at(-1) as string, env };
}
