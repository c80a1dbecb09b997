"""A buf-generated Python client: publishes an event, then lists the deliveries.

Usage: publish_and_list.py <host:port> <admin token> <client id> <client key> <subscription id>
Prints one JSON object: the job ids and the notifications the delivery log shows.
"""
import json
import sys
import time

import grpc
from google.protobuf import json_format, struct_pb2

from webhooks.v1 import delivery_service_pb2, delivery_service_pb2_grpc, event_service_pb2, event_service_pb2_grpc


def main() -> None:
    target, admin_token, client_id, client_key, subscription_id = sys.argv[1:6]
    with grpc.insecure_channel(target) as channel:
        events = event_service_pb2_grpc.EventServiceStub(channel)
        payload = struct_pb2.Struct()
        payload.update({"OrderId": "ord_py", "Carrier": "UPS", "TrackingNumber": "1Z999"})
        published = events.PublishEvent(
            event_service_pb2.PublishEventRequest(client_id=client_id, event="Order.Shipped", payload=payload, idempotency_key="py-1"),
            metadata=[("authorization", f"Bearer {admin_token}")],
        )

        deliveries = delivery_service_pb2_grpc.DeliveryServiceStub(channel)
        request = delivery_service_pb2.ListNotificationsRequest(subscription_id=subscription_id)
        listed = None
        for _ in range(50):
            listed = deliveries.ListNotifications(request, metadata=[("authorization", f"Bearer {client_key}")])
            if listed.notifications and all(n.status == delivery_service_pb2.NOTIFICATION_STATUS_DELIVERED for n in listed.notifications):
                break
            time.sleep(0.1)

        try:
            events.PublishEvent(event_service_pb2.PublishEventRequest(client_id=client_id, event="Order.Shipped"), metadata=[("authorization", "Bearer wrong")])
            refused = "no error"
        except grpc.RpcError as error:
            refused = error.code().name

    print(
        json.dumps(
            {
                "jobIds": list(published.job_ids),
                "notifications": [json_format.MessageToDict(n) for n in listed.notifications],
                "wrongTokenCode": refused,
            }
        )
    )


if __name__ == "__main__":
    main()
