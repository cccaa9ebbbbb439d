import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a ledger keeps this device's bearer token. The token is never stored in the ledger's
/// database. Conformers must be safe to call from any task.
public protocol CredentialStore: Sendable {
    /// The stored token, nil when signed out.
    func token() async throws -> String?
    /// Stores `token`, replacing any other.
    func setToken(_ token: String) async throws
    /// Forgets the token.
    func removeToken() async throws
    /// The token of the account a shared ledger belongs to, kept while another account is
    /// signed in so the device can go back to it. The default keeps none.
    func pinnedToken() async throws -> String?
    /// Stores or (nil) forgets the pinned account's token. The default keeps none.
    func setPinnedToken(_ token: String?) async throws
}

extension CredentialStore {
    public func pinnedToken() async throws -> String? { nil }
    public func setPinnedToken(_ token: String?) async throws {}
}

/// Keeps the token in a file readable and writable only by its owner (mode 0600).
public struct FileCredentialStore: CredentialStore {
    /// The token file.
    public let file: URL

    /// Keeps the token in `directory/kidledger-token`.
    public init(directory: URL) {
        self.init(file: directory.appendingPathComponent("kidledger-token"))
    }

    /// Keeps the token in `file` (the pinned account's in `file` + `-pinned`).
    public init(file: URL) {
        self.file = file
    }

    private var pinnedFile: URL { URL(fileURLWithPath: file.path + "-pinned") }

    public func token() async throws -> String? { try Self.read(file) }
    public func setToken(_ token: String) async throws { try Self.write(token, to: file) }
    public func removeToken() async throws { try Self.remove(file) }
    public func pinnedToken() async throws -> String? { try Self.read(pinnedFile) }
    public func setPinnedToken(_ token: String?) async throws {
        if let token { try Self.write(token, to: pinnedFile) } else { try Self.remove(pinnedFile) }
    }

    static func read(_ url: URL) throws -> String? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let text = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Writes through a temporary file created with mode 0600, then renames it over `url`,
    /// so the token is never readable by others, even for a moment.
    static func write(_ token: String, to url: URL) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        guard fm.createFile(atPath: temporary.path, contents: Data((token + "\n").utf8),
                            attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: temporary.path)
        // rename(2) replaces the old file in one step.
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            try? fm.removeItem(at: temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    static func remove(_ url: URL) throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}

/// Keeps the token in memory only (previews, tests, a ledger that is never signed in for long).
public actor InMemoryCredentialStore: CredentialStore {
    private var stored: String?
    private var pinned: String?

    public init(token: String? = nil) { stored = token }

    public func token() async throws -> String? { stored }
    public func setToken(_ token: String) async throws { stored = token }
    public func removeToken() async throws { stored = nil }
    public func pinnedToken() async throws -> String? { pinned }
    public func setPinnedToken(_ token: String?) async throws { pinned = token }
}

#if canImport(Security)
import Security

/// Keeps the token in the Keychain as a generic password (`service`, `account`), available
/// after the first unlock so background syncs and extensions can read it.
///
/// With `synchronizable: true` the token is kept in iCloud Keychain, so the person's other
/// devices, and a new iPhone set up from their Apple Account, are signed in too (as CloudKit
/// apps are): a ledger opened there finds the token, and `households()` or `open(household:)`
/// learn its account from the server. Those devices then share one device token, so signing out
/// on one signs them all out. The pinned account's token (see `CredentialStore.pinnedToken()`)
/// always stays on this device.
public struct KeychainCredentialStore: CredentialStore {
    public let service: String
    public let account: String
    /// A Keychain access group shared with app extensions, if any.
    public let accessGroup: String?
    /// True when the token is kept in iCloud Keychain; default false (this device only).
    public let synchronizable: Bool

    public init(service: String = "kidledger", account: String = "device-token", accessGroup: String? = nil,
                synchronizable: Bool = false) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.synchronizable = synchronizable
    }

    /// The item's query. `synced`: nil matches both kinds of item (reads and deletes, so a
    /// token stored before the option changed is still found), true or false one kind.
    private func query(_ account: String, synced: Bool?) -> [String: Any] {
        var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                kSecAttrService as String: service,
                                kSecAttrAccount as String: account]
        if let accessGroup { q[kSecAttrAccessGroup as String] = accessGroup }
        switch synced {
        case nil: q[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        case true?: q[kSecAttrSynchronizable as String] = true
        case false?: break
        }
        return q
    }

    private func read(_ account: String, synced: Bool) throws -> String? {
        var q = query(account, synced: synced ? nil : false)
        q[kSecReturnData as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(q as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw KeychainFailure(status: status) }
        return String(data: data, encoding: .utf8)
    }

    private func write(_ token: String?, _ account: String, synced: Bool) throws {
        let deleted = SecItemDelete(query(account, synced: synced ? nil : false) as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw KeychainFailure(status: deleted) }
        guard let token else { return }
        var add = query(account, synced: synced)
        add[kSecValueData as String] = Data(token.utf8)
        // An item that syncs cannot be bound to this device.
        add[kSecAttrAccessible as String] = synced ? kSecAttrAccessibleAfterFirstUnlock : kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(add as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainFailure(status: status) }
    }

    public func token() async throws -> String? { try read(account, synced: synchronizable) }
    public func setToken(_ token: String) async throws { try write(token, account, synced: synchronizable) }
    public func removeToken() async throws { try write(nil, account, synced: synchronizable) }
    public func pinnedToken() async throws -> String? { try read(account + ".pinned", synced: false) }
    public func setPinnedToken(_ token: String?) async throws { try write(token, account + ".pinned", synced: false) }
}

/// A Keychain call failed with this `OSStatus`.
public struct KeychainFailure: Error, Sendable, CustomStringConvertible {
    public var status: Int32
    public var description: String { "Keychain error \(status)" }
}
#endif
