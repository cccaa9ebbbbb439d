/// The one household this device's ledger belongs to.
public struct HouseholdRecord: Sendable, Equatable, Codable {
    /// Chosen by the device when the ledger was created; the server keeps it (PUT with this id).
    public var id: String
    public var name: String
    /// ISO 4217 code, default `USD`.
    public var currency: String
    public var ownerAccountId: String?
    public var changeTag: String?
    /// `owner` or `participant`, once known from the server.
    public var role: String?
    /// `readWrite` or `readOnly`, once known from the server.
    public var permission: String?
    public var shared: Bool
}
