import Foundation
import Glibc

/// Key files in the data folder (`cursor.key`, `entitlement-keys/signing-key.pem`), which
/// several server processes sharing that folder may create at the same moment. Each writes
/// its candidate under a name of its own and links it to the key's name, which only the
/// first can do; the others find the file there and use it, so every process ends up with
/// the same key.
enum KeyFile {
    /// Creates `path` holding `contents`, readable by the owner only, unless a file is
    /// already there: true when this call created it, false when it was there (made by
    /// another process, now or before). Throws when the folder cannot be written.
    static func createUnlessPresent(_ path: String, contents: Data) throws -> Bool {
        let candidate = "\(path).\(getpid()).\(UInt64.random(in: 0...UInt64.max)).new"
        guard FileManager.default.createFile(atPath: candidate, contents: contents,
                                             attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: candidate])
        }
        defer { unlink(candidate) }
        if link(candidate, path) == 0 { return true }
        let error = errno
        if error == EEXIST { return false }
        throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO, userInfo: [NSFilePathErrorKey: path])
    }
}
