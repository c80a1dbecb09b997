import type { Collection, UpdateFilter } from "mongodb";
import type { EventType, JsonObject } from "../../domain/model.js";
import type { EventTypeStore } from "../../domain/ports.js";
import { type EventTypeDoc, isDuplicateKey, isString, optional } from "./documents.js";

/** JSON text, as the SQL adapter binds it; refuses what JSON can't carry (SQL's NOT NULL would). */
function toJson(value: JsonObject, field: string): string {
  const text: unknown = JSON.stringify(value);
  if (!isString(text)) throw new TypeError(`${field} must be JSON`);
  return text;
}

const toEventType = (doc: EventTypeDoc): EventType => ({
  name: doc._id,
  description: doc.description,
  samplePayload: JSON.parse(doc.samplePayload) as JsonObject,
  ...optional("jsonSchema", doc.jsonSchema == null ? undefined : (JSON.parse(doc.jsonSchema) as JsonObject)),
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});

export class MongoEventTypeStore implements EventTypeStore {
  constructor(private readonly types: Collection<EventTypeDoc>) {}

  async insert(type: EventType): Promise<boolean> {
    if (!isString(type.name)) throw new TypeError("name must be a string");
    try {
      await this.types.insertOne({
        _id: type.name,
        description: type.description,
        samplePayload: toJson(type.samplePayload, "samplePayload"),
        // Truthiness, as the SQL adapter tests it.
        ...(type.jsonSchema ? { jsonSchema: toJson(type.jsonSchema, "jsonSchema") } : {}),
        createdAt: type.createdAt,
        updatedAt: type.updatedAt,
      });
      return true;
    } catch (error) {
      // `_id` is the only unique key here: the name exists (SQL ON CONFLICT DO NOTHING).
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async update(type: EventType): Promise<boolean> {
    if (!isString(type.name)) return false;
    const fields = {
      description: type.description,
      samplePayload: toJson(type.samplePayload, "samplePayload"),
      updatedAt: type.updatedAt,
    };
    // A type without a schema loses the stored one (SQL sets the column to NULL).
    const update: UpdateFilter<EventTypeDoc> = type.jsonSchema
      ? { $set: { ...fields, jsonSchema: toJson(type.jsonSchema, "jsonSchema") } }
      : { $set: fields, $unset: { jsonSchema: "" } };
    const { matchedCount } = await this.types.updateOne({ _id: type.name }, update);
    return matchedCount === 1;
  }

  async get(name: string): Promise<EventType | undefined> {
    if (!isString(name)) return undefined;
    const doc = await this.types.findOne({ _id: name });
    return doc ? toEventType(doc) : undefined;
  }

  async list(): Promise<EventType[]> {
    const docs = await this.types.find({}).sort({ _id: 1 }).toArray();
    return docs.map(toEventType);
  }
}
