import LedgerCore
import COpenSSL
import Foundation

/// Seals secrets the server keeps for others (Apple refresh tokens) with AES-256-GCM under
/// a key of this server, kept with its other keys in the data folder.
///
/// Sealed form: a random 12-byte nonce ‖ ciphertext ‖ 16-byte tag. The associated data
/// binds a sealed value to its row (its id and account), so one cannot be moved to another.
/// ``keyId`` (the first 16 hex digits of the key's SHA-256) is stored beside each value: a
/// process given another key leaves values it cannot open to the processes that can.
final class TokenSealer: Sendable {
    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16
    /// The key's file in the data folder.
    static let fileName = "identity-token.key"

    private let key: [UInt8]
    let keyId: String

    init(key: [UInt8]) {
        precondition(key.count == Self.keyLength)
        self.key = key
        keyId = String(TokenSealer.hex(Self.sha256(key)).prefix(16))
    }

    /// The key in `<directory>/identity-token.key`, made with 32 random bytes when missing
    /// (of processes sharing the folder that start together, the first one's is everybody's:
    /// `KeyFile`). A file of another length is refused, never replaced: values sealed under
    /// the key it held would be lost.
    convenience init(directory: String) throws {
        let path = directory + "/" + Self.fileName
        if !FileManager.default.fileExists(atPath: path) {
            do {
                _ = try KeyFile.createUnlessPresent(path, contents: Data(Cursor.randomKey()))
            } catch {
                throw TokenSealerError("\(path): cannot write the identity token key (\(error))")
            }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TokenSealerError("\(path): cannot read the identity token key")
        }
        guard data.count == Self.keyLength else {
            throw TokenSealerError("\(path) holds \(data.count) bytes, not a \(Self.keyLength)-byte key; restore the right file")
        }
        self.init(key: Array(data))
    }

    /// `plaintext` sealed with a fresh nonce, bound to `associatedData`.
    func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: Self.nonceLength)
        guard RAND_bytes(&nonce, Int32(nonce.count)) == 1 else { throw TokenSealerError("no random bytes for a nonce") }
        defer { ERR_clear_error() }
        guard let context = EVP_CIPHER_CTX_new() else { throw TokenSealerError("cannot allocate a cipher context") }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.tagLength)
        var length: Int32 = 0, total = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceLength), nil) == 1,
              EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1,
              associatedData.isEmpty || EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
        else { throw TokenSealerError("cannot set up AES-256-GCM") }
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(context, &out, &length, plaintext, Int32(plaintext.count)) == 1 else {
                throw TokenSealerError("encryption failed")
            }
            total = Int(length)
        }
        let finished = out.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &length)
        }
        guard finished == 1 else { throw TokenSealerError("encryption failed") }
        total += Int(length)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), &tag) == 1 else {
            throw TokenSealerError("no authentication tag")
        }
        return nonce + out.prefix(total) + tag
    }

    /// The plaintext of a value `seal` made with the same key and associated data; nil when
    /// it was made otherwise or altered.
    func open(_ sealed: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.nonceLength + Self.tagLength else { return nil }
        defer { ERR_clear_error() }
        let nonce = Array(sealed.prefix(Self.nonceLength))
        let ciphertext = Array(sealed.dropFirst(Self.nonceLength).dropLast(Self.tagLength))
        var tag = Array(sealed.suffix(Self.tagLength))
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: ciphertext.count + Self.tagLength)
        var length: Int32 = 0, total = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceLength), nil) == 1,
              EVP_DecryptInit_ex(context, nil, nil, key, nonce) == 1,
              associatedData.isEmpty || EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
        else { return nil }
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(context, &out, &length, ciphertext, Int32(ciphertext.count)) == 1 else { return nil }
            total = Int(length)
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), &tag) == 1 else { return nil }
        let verified = out.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + total, &length)
        }
        guard verified == 1 else { return nil }
        return Array(out.prefix(total + Int(length)))
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = kidledger_sha256(bytes, bytes.count, &digest)
        return digest
    }

    /// Lowercase hex.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Why the identity token key or a sealing failed, in words for the operator.
struct TokenSealerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
