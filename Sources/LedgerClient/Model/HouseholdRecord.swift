/// The one household this device's ledger belongs to.
struct HouseholdRecord: Sendable, Equatable {
    /// Chosen by the device when the ledger was created; the server keeps it (PUT with this id).
    var id: String
    var name: String
    /// ISO 4217 code, default `USD`.
    var currency: String
    var ownerAccountId: String?
    var changeTag: String?
    /// The caller's role, once known from the server.
    var role: Role?
    /// The caller's permission, once known from the server.
    var permission: Permission?
    var shared: Bool
}
