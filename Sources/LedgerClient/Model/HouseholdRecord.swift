/// The one household this device's ledger belongs to.
struct HouseholdRecord: Sendable, Equatable, Codable {
    /// Chosen by the device when the ledger was created; the server keeps it (PUT with this id).
    var id: String
    var name: String
    /// ISO 4217 code, default `USD`.
    var currency: String
    var ownerAccountId: String?
    var changeTag: String?
    /// `owner` or `participant`, once known from the server.
    var role: String?
    /// `readWrite` or `readOnly`, once known from the server.
    var permission: String?
    var shared: Bool
}
