import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, extname, join, relative, resolve } from "node:path";
import test from "ava";

/**
 * No module of src/ or of a package's src/ imports itself through others.
 * A circle makes the order in which modules run depend on which one is
 * imported first, and a reader cannot understand either file alone; a
 * type-only circle counts too, as it ties the files just the same.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const SOURCE_EXTENSIONS = [".ts", ".mts", ".cts"];

/** Static imports and re-exports (`import … from`, `export … from`, `import "…"`) at a line's start, and dynamic `import("…")`. */
const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;"']*?\bfrom\s*["']([^"']+)["']/gm,
  /^\s*import\s*["']([^"']+)["']/gm,
  /\bimport\(\s*["']([^"']+)["']\s*\)/g,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return SOURCE_EXTENSIONS.includes(extname(entry.name)) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The source file a relative specifier names, as TypeScript's nodenext resolution finds it (`./x.js` is `./x.ts`); undefined for a package or a non-source file. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = resolve(dirname(from), specifier);
  const stem = target.replace(/\.(?:[cm]?js)$/, "");
  const candidates = [
    target,
    ...SOURCE_EXTENSIONS.map((extension) => stem + extension),
    ...SOURCE_EXTENSIONS.map((extension) => join(target, `index${extension}`)),
  ];
  return candidates.find(
    (candidate) => SOURCE_EXTENSIONS.includes(extname(candidate)) && existsSync(candidate) && statSync(candidate).isFile(),
  );
}

function importGraph(roots: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of roots.flatMap(sourceFiles)) {
    const text = readFileSync(file, "utf8");
    const specifiers = SPECIFIERS.flatMap((pattern) => [...text.matchAll(pattern)].map((match) => match[1] as string));
    graph.set(file, [...new Set(specifiers.flatMap((specifier) => resolveSpecifier(file, specifier) ?? []))]);
  }
  return graph;
}

/** Every circle, each as the files along it (strongly connected components of more than one file, or a file importing itself; Tarjan's algorithm). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    lowLink.set(file, index.get(file) as number);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(file, Math.min(lowLink.get(file) as number, lowLink.get(next) as number));
      } else if (stack.includes(next)) lowLink.set(file, Math.min(lowLink.get(file) as number, index.get(next) as number));
    }
    if (lowLink.get(file) !== index.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

function sourceRoots(root: string): string[] {
  const packages = join(root, "packages");
  const packageSources = readdirSync(packages).map((name) => join(packages, name, "src"));
  return [join(root, "src"), ...packageSources.filter((dir) => existsSync(dir))];
}

test("no import circle in src/ or packages/*/src", (t) => {
  const graph = importGraph(sourceRoots(ROOT));
  const found = circles(graph).map((circle) => circle.map((file) => relative(ROOT, file)).join(" -> "));
  t.deepEqual(found, [], `import circles:\n${found.join("\n")}`);
});

test("the check sees every kind of import, and finds a circle through them", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "import-cycles-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "folder"));
  const files: Record<string, string> = {
    "a.ts": 'import { b } from "./b.js";\nexport const a = b;\n',
    "b.ts": 'import type {\n  C,\n} from "./folder/index.js";\nexport const b = 1;\nexport type B = C;\n',
    "folder/index.ts": 'export { d } from "../d.js";\nexport type C = number;\n',
    "d.ts": 'import "./e.js";\nexport const d = 1;\n',
    "e.ts": 'export const e = async () => (await import("./a.js")).a;\n',
    "alone.ts":
      '// import { a } from "./a.js" is only a comment here\nimport { readFileSync } from "node:fs";\nexport const alone = readFileSync;\n',
    "self.ts": 'import * as self from "./self.js";\nexport const me = self;\n',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const found = circles(importGraph([dir])).map((circle) => circle.map((file) => relative(dir, file)));
  t.deepEqual(found.sort(), [["a.ts", "b.ts", "d.ts", "e.ts", "folder/index.ts"], ["self.ts"]]);
});
