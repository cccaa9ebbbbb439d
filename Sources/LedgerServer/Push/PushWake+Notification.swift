import LedgerCore
import LedgerModel

extension PushWake {
    /// The Matrix Push Gateway API notification of this wake, and nothing else: the
    /// household as the room, the change position as the event, low priority, no content
    /// (`event_id_only`), so neither the server nor the gateway's logs carry a name, an
    /// amount or a note.
    var notification: JSONValue {
        let device: JSONValue = .object([
            "app_id": .string(registration.appId),
            "pushkey": .string(registration.pushKey),
            "pushkey_ts": .int(registration.registeredAt / 1000),
            "data": .object(["format": "event_id_only"]),
        ])
        return .object(["notification": .object([
            "event_id": .string(eventId),
            "room_id": .string(householdId),
            "prio": "low",
            "counts": .object(["unread": .int(0)]),
            "devices": .array([device]),
        ])])
    }

    /// The opaque change position a wake announces.
    var eventId: String { "$" + String(seq) }
}
