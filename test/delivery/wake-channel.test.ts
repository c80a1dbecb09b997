import { BaseNotificationChannel } from "agenda";
import test from "ava";
import { WakeChannel } from "../../src/delivery/wake-channel.js";

/** A remote channel that, like @agendajs/postgres-backend's, may still emit errors after it was disconnected. */
class LateErroringChannel extends BaseNotificationChannel {
  async connect(): Promise<void> {
    this.setState("connected");
  }
  async disconnect(): Promise<void> {
    this.setState("disconnected");
  }
  async publish(): Promise<void> {}
}

test("a remote channel's error after disconnecting is reported, not thrown", async (t) => {
  const remote = new LateErroringChannel();
  const reported: unknown[] = [];
  const channel = new WakeChannel(
    "instance-a",
    remote,
    () => {},
    (error) => reported.push(error),
  );
  await channel.connect();
  await channel.disconnect();
  const late = new Error("terminating connection due to administrator command");
  t.notThrows(() => remote.emit("error", late));
  t.deepEqual(reported, [late]);
});
