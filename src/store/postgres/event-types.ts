import type { EventType, JsonObject } from "../../domain/model.js";
import type { EventTypeStore } from "../../domain/ports.js";
import { optional } from "./rows.js";
import type { SqlPool } from "./sql-pool.js";

interface EventTypeRow {
  name: string;
  description: string;
  sample_payload: JsonObject;
  json_schema: JsonObject | null;
  created_at: Date;
  updated_at: Date;
}

const toEventType = (row: EventTypeRow): EventType => ({
  name: row.name,
  description: row.description,
  samplePayload: row.sample_payload,
  ...optional("jsonSchema", row.json_schema),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export class PostgresEventTypeStore implements EventTypeStore {
  constructor(private readonly pool: SqlPool) {}

  async insert(type: EventType): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO wh_event_types (name, description, sample_payload, json_schema, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING`,
      [
        type.name,
        type.description,
        JSON.stringify(type.samplePayload),
        type.jsonSchema ? JSON.stringify(type.jsonSchema) : null,
        type.createdAt,
        type.updatedAt,
      ],
    );
    return rowCount === 1;
  }

  async update(type: EventType): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE wh_event_types SET description = $2, sample_payload = $3, json_schema = $4, updated_at = $5 WHERE name = $1",
      [
        type.name,
        type.description,
        JSON.stringify(type.samplePayload),
        type.jsonSchema ? JSON.stringify(type.jsonSchema) : null,
        type.updatedAt,
      ],
    );
    return rowCount === 1;
  }

  async get(name: string): Promise<EventType | undefined> {
    const { rows } = await this.pool.query<EventTypeRow>("SELECT * FROM wh_event_types WHERE name = $1", [name]);
    return rows[0] && toEventType(rows[0]);
  }

  async list(): Promise<EventType[]> {
    const { rows } = await this.pool.query<EventTypeRow>("SELECT * FROM wh_event_types ORDER BY name");
    return rows.map(toEventType);
  }
}
