import { NotFoundError, ValidationError } from "./errors.js";
import type { JsonObject } from "./model.js";

export interface EventType {
  /** `<Entity>.<Event>`, for example `Order.Created`. */
  name: string;
  description: string;
  /** Event-specific fields of the sample notification. */
  samplePayload: JsonObject;
}

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}\.[A-Za-z][A-Za-z0-9]{0,63}$/;
/** Fields every notification body carries; an event's own fields may not reuse them. */
export const BASE_FIELDS = ["Event", "Timestamp"] as const;

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

/** The event types clients may subscribe to. */
export class EventCatalog {
  readonly #byName: Map<string, EventType>;

  constructor(types: readonly EventType[]) {
    this.#byName = new Map();
    for (const type of types) {
      assertEventName(type.name, "name");
      for (const field of BASE_FIELDS) {
        if (field in type.samplePayload) {
          throw new ValidationError(`event type ${type.name}: the sample payload may not set the base field ${field}`);
        }
      }
      if (this.#byName.has(type.name)) throw new ValidationError(`event type ${type.name} is listed twice`);
      this.#byName.set(type.name, type);
    }
  }

  list(): EventType[] {
    return [...this.#byName.values()];
  }

  /** The named type; a ValidationError (the caller sent it) when unknown. */
  require(name: string): EventType {
    assertEventName(name);
    const type = this.#byName.get(name);
    if (!type) {
      throw new ValidationError(
        `unknown event ${JSON.stringify(name)}; GET /api/webhookSubscription/events lists the available events`,
        "event",
      );
    }
    return type;
  }

  get(name: string): EventType {
    const type = this.#byName.get(name);
    if (!type) throw new NotFoundError(`event type ${name} not found`);
    return type;
  }
}

/** Parses a catalog file's JSON: `[{name, description, samplePayload}]`. */
export function parseCatalog(json: unknown): EventType[] {
  if (!Array.isArray(json)) throw new ValidationError("an event catalog is a JSON array of event types");
  return json.map((entry: unknown, index) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ValidationError(`event catalog entry ${index} is not an object`);
    }
    const { name, description, samplePayload } = entry as Record<string, unknown>;
    if (typeof name !== "string") throw new ValidationError(`event catalog entry ${index} has no string "name"`);
    if (description !== undefined && typeof description !== "string") {
      throw new ValidationError(`event catalog entry ${name}: "description" must be a string`);
    }
    if (samplePayload !== undefined && (typeof samplePayload !== "object" || samplePayload === null || Array.isArray(samplePayload))) {
      throw new ValidationError(`event catalog entry ${name}: "samplePayload" must be a JSON object`);
    }
    return { name, description: description ?? "", samplePayload: (samplePayload ?? {}) as JsonObject };
  });
}
