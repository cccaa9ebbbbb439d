import LedgerCore
import LedgerModel

/// `GET …/sync-status`: per device token and household, when it last pulled and pushed and
/// how many records changed after its last pull (`LedgerReading.syncStatus`, recorded by
/// `LedgerWriting.recordPull`/`recordPush`).
extension SyncStatusReport {
    /// `{householdId, latestToken, access, devices, nextCursor}`.
    func json(household: String, nextCursor: String? = nil) -> JSONValue {
        .object([
            "householdId": .string(household), "latestToken": .string(latest.token), "access": membership.accessJSON,
            "devices": .array(devices.map { d in
                .object([
                    "tokenId": .string(d.tokenId), "accountId": .string(d.accountId), "deviceName": .string(d.deviceName),
                    "lastPullAt": d.lastPullAt.map { .string(Timestamp.format(ms: $0)) } ?? .null,
                    "lastPushAt": d.lastPushAt.map { .string(Timestamp.format(ms: $0)) } ?? .null,
                    "changesBehind": .int(d.changesBehind),
                ])
            }),
            "nextCursor": nextCursor.map { .string($0) } ?? .null,
        ])
    }
}
