import Foundation

/// Opaque list cursors: base64url of `<kind>:<position>`.
enum Cursor {
    static func encode(kind: String, _ position: Int64) -> String {
        TokenSecret.base64url(Array("\(kind):\(position)".utf8))
    }

    /// The position in a cursor of `kind`; nil when absent; 422 when malformed.
    static func decode(_ raw: String?, kind: String) throws -> Int64? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let bytes = TokenSecret.base64urlDecode(raw), let text = String(validating: bytes, as: UTF8.self),
              text.hasPrefix(kind + ":"), let v = Int64(text.dropFirst(kind.count + 1)), v >= 0 else {
            throw APIError.validation("cursor", "is not a cursor this list gave out")
        }
        return v
    }
}
