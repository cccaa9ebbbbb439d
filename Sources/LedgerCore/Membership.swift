import LedgerModel

/// The caller's standing in a household.
package struct Membership: Sendable {
    package enum Role: String, Sendable { case owner, participant }
    package enum Permission: String, Sendable { case readWrite, readOnly }
    /// What an operation needs of the caller (see `LedgerReading.membership`).
    package enum Need: Sendable { case read, write, owner }

    package let householdId: String
    package let role: Role
    package let permission: Permission
    package let ownerAccountId: String

    package init(householdId: String, role: Role, permission: Permission, ownerAccountId: String) {
        (self.householdId, self.role, self.permission) = (householdId, role, permission)
        self.ownerAccountId = ownerAccountId
    }

    package var canWrite: Bool { permission == .readWrite }

    package var accessJSON: JSONValue { .object(["role": .string(role.rawValue), "permission": .string(permission.rawValue)]) }
}
