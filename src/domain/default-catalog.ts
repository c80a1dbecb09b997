import type { EventTypeDefinition } from "./event-catalog.js";

/** The catalog shipped with the service; `EVENT_CATALOG_FILE` replaces it. */
export const DEFAULT_CATALOG: readonly EventTypeDefinition[] = [
  {
    name: "Order.Created",
    description: "A customer placed an order.",
    samplePayload: {
      OrderId: "ord_1001",
      CustomerId: "cus_42",
      Currency: "EUR",
      TotalAmount: 129.9,
      Items: [{ Sku: "SKU-RED-M", Quantity: 2, UnitPrice: 64.95 }],
    },
    jsonSchema: {
      type: "object",
      required: ["OrderId", "CustomerId", "Currency", "TotalAmount"],
      properties: {
        OrderId: { type: "string" },
        CustomerId: { type: "string" },
        Currency: { type: "string", pattern: "^[A-Z]{3}$" },
        TotalAmount: { type: "number", minimum: 0 },
        Items: { type: "array", items: { type: "object" } },
      },
    },
  },
  {
    name: "Order.Cancelled",
    description: "An order was cancelled before it shipped.",
    samplePayload: { OrderId: "ord_1001", Reason: "CustomerRequest" },
  },
  {
    name: "Order.Shipped",
    description: "An order left the warehouse.",
    samplePayload: { OrderId: "ord_1001", Carrier: "DHL", TrackingNumber: "JD014600003828401234" },
  },
  {
    name: "Payment.Succeeded",
    description: "A payment was captured.",
    samplePayload: { PaymentId: "pay_7001", OrderId: "ord_1001", Amount: 129.9, Currency: "EUR" },
  },
  {
    name: "Payment.Failed",
    description: "A payment attempt was declined.",
    samplePayload: { PaymentId: "pay_7002", OrderId: "ord_1002", FailureCode: "card_declined" },
  },
  {
    name: "Customer.Created",
    description: "A customer account was opened.",
    samplePayload: { CustomerId: "cus_42", Email: "jane.doe@example.com", Country: "DE" },
  },
  {
    name: "Invoice.Issued",
    description: "An invoice was issued for an order.",
    samplePayload: { InvoiceId: "inv_2026_0001", OrderId: "ord_1001", DueDate: "2026-12-21", Amount: 129.9 },
  },
];
