import { ConflictError, NotFoundError, ValidationError } from "./errors.js";
import type { EventType, JsonObject } from "./model.js";
import { compileSchema } from "./payload-schema.js";
import type { EventTypeStore } from "./ports.js";

/** What defines an event type: a catalog file entry, or a registration. */
export interface EventTypeDefinition {
  name: string;
  description: string;
  samplePayload: JsonObject;
  jsonSchema?: JsonObject;
}

export interface EventTypeChanges {
  description?: string;
  samplePayload?: JsonObject;
  /** A schema to set, or null to remove it. */
  jsonSchema?: JsonObject | null;
}

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}\.[A-Za-z][A-Za-z0-9]{0,63}$/;
/** Fields every notification body carries; an event's own fields may not reuse them. */
export const BASE_FIELDS = ["Event", "Timestamp"] as const;
const MAX_DESCRIPTION = 1000;

/** Throws a ValidationError unless `name` has the form `<Entity>.<Event>`. */
export function assertEventName(name: string, field = "event"): void {
  if (!EVENT_NAME.test(name)) {
    const shown = name.length > 80 ? `${name.slice(0, 80)}…` : name;
    throw new ValidationError(
      `${field} must look like <Entity>.<Event> (letters and digits, e.g. Order.Created), got ${JSON.stringify(shown)}`,
      field,
    );
  }
}

/** Checks a definition before it is stored: name, base fields, description, schema. */
export function assertDefinition(definition: EventTypeDefinition): void {
  assertEventName(definition.name, "name");
  for (const field of BASE_FIELDS) {
    if (Object.hasOwn(definition.samplePayload, field)) {
      throw new ValidationError(`event type ${definition.name}: the sample payload may not set the base field ${field}`, "samplePayload");
    }
  }
  if (definition.description.length > MAX_DESCRIPTION) {
    throw new ValidationError(`description is longer than ${MAX_DESCRIPTION} characters`, "description");
  }
  if (definition.jsonSchema) compileSchema(definition.jsonSchema);
}

/** How long a process trusts its copy of the event types (other instances may change them). */
const CACHE_MS = 2_000;

/** The event types: seeded from the catalog, registered and updated by internal services. */
export class EventCatalog {
  #cache: { at: number; byName: Map<string, EventType> } | undefined;
  /** The read under way, shared by callers arriving meanwhile. */
  #reading: Promise<Map<string, EventType>> | undefined;

  constructor(private readonly store: EventTypeStore) {}

  /** Stores each definition whose name is not registered yet; registered ones stay as they are. */
  async seed(definitions: readonly EventTypeDefinition[]): Promise<void> {
    const now = new Date();
    for (const definition of definitions) {
      assertDefinition(definition);
      await this.store.insert({ ...definition, createdAt: now, updatedAt: now });
    }
    this.#invalidate();
  }

  async list(): Promise<EventType[]> {
    return [...(await this.#byName()).values()];
  }

  /** The named type; a ValidationError (the caller sent it) when unknown. */
  async require(name: string): Promise<EventType> {
    assertEventName(name);
    const type = (await this.#byName()).get(name) ?? (await this.store.get(name));
    if (!type) {
      throw new ValidationError(
        `unknown event ${JSON.stringify(name)}; GET /api/webhookSubscription/events lists the available events`,
        "event",
      );
    }
    return type;
  }

  async register(definition: EventTypeDefinition): Promise<EventType> {
    assertDefinition(definition);
    const now = new Date();
    const type: EventType = { ...definition, createdAt: now, updatedAt: now };
    if (!(await this.store.insert(type))) throw new ConflictError(`event type ${definition.name} exists already; update it instead`);
    this.#invalidate();
    return type;
  }

  async update(name: string, changes: EventTypeChanges): Promise<EventType> {
    assertEventName(name, "name");
    const current = await this.store.get(name);
    if (!current) throw new NotFoundError(`event type ${name} not found`);
    const { jsonSchema: _dropped, ...rest } = current;
    const schema = changes.jsonSchema === undefined ? current.jsonSchema : (changes.jsonSchema ?? undefined);
    const next: EventType = {
      ...rest,
      description: changes.description ?? current.description,
      samplePayload: changes.samplePayload ?? current.samplePayload,
      ...(schema ? { jsonSchema: schema } : {}),
      updatedAt: new Date(),
    };
    assertDefinition(next);
    if (!(await this.store.update(next))) throw new NotFoundError(`event type ${name} not found`);
    this.#invalidate();
    return next;
  }

  #byName(): Promise<Map<string, EventType>> {
    if (this.#cache && Date.now() - this.#cache.at < CACHE_MS) return Promise.resolve(this.#cache.byName);
    if (this.#reading) return this.#reading;
    const reading: Promise<Map<string, EventType>> = this.store.list().then(
      (types) => {
        const byName = new Map(types.map((t) => [t.name, t]));
        // A change made while reading dropped this read: it answers its own callers, uncached.
        if (this.#reading === reading) {
          this.#cache = { at: Date.now(), byName };
          this.#reading = undefined;
        }
        return byName;
      },
      (error: unknown) => {
        if (this.#reading === reading) this.#reading = undefined;
        throw error;
      },
    );
    this.#reading = reading;
    return reading;
  }

  /** After a change: the next caller reads again, and a read already under way is not cached. */
  #invalidate(): void {
    this.#cache = undefined;
    this.#reading = undefined;
  }
}

/** Parses a catalog file's JSON: `[{name, description, samplePayload, jsonSchema}]`. */
export function parseCatalog(json: unknown): EventTypeDefinition[] {
  if (!Array.isArray(json)) throw new ValidationError("an event catalog is a JSON array of event types");
  const seen = new Set<string>();
  return json.map((entry: unknown, index) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ValidationError(`event catalog entry ${index} is not an object`);
    }
    const { name, description, samplePayload, jsonSchema } = entry as Record<string, unknown>;
    if (typeof name !== "string") throw new ValidationError(`event catalog entry ${index} has no string "name"`);
    if (description !== undefined && typeof description !== "string") {
      throw new ValidationError(`event catalog entry ${name}: "description" must be a string`);
    }
    for (const [field, value] of [
      ["samplePayload", samplePayload],
      ["jsonSchema", jsonSchema],
    ] as const) {
      if (value !== undefined && (typeof value !== "object" || value === null || Array.isArray(value))) {
        throw new ValidationError(`event catalog entry ${name}: "${field}" must be a JSON object`);
      }
    }
    if (seen.has(name)) throw new ValidationError(`event type ${name} is listed twice`);
    seen.add(name);
    const definition: EventTypeDefinition = {
      name,
      description: description ?? "",
      samplePayload: (samplePayload ?? {}) as JsonObject,
      ...(jsonSchema ? { jsonSchema: jsonSchema as JsonObject } : {}),
    };
    assertDefinition(definition);
    return definition;
  });
}
