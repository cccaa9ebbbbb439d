import LedgerModel

/// The claims of a verified token's payload, typed (OpenID Connect Core 1.0 section 2).
///
/// A required claim (`iss`, `sub`, `aud`, `exp`, `iat`) that is missing is `malformed`, as
/// are a `sub` that is not a non-empty string and times that are not finite numbers. An
/// `iss` or `aud` of another type can never match, so it is `issuer` or `audience`.
struct IDTokenClaims {
    /// `iss`, or nil when it is not a string.
    let issuer: String?
    let subject: String
    /// `aud` as a list (a single string is a list of one), or nil when it is neither a
    /// string nor an array of strings.
    let audiences: [String]?
    /// Seconds since 1970.
    let expiresAt: Double
    let issuedAt: Double
    let notBefore: Double?
    /// `nonce` when present: nil when absent, `.some(nil)` when not a string.
    let nonce: String??
    let email: String?
    let emailVerified: Bool?
    let object: JSONObject

    init(payload: [UInt8]) throws(IDTokenError) {
        let document: JSONValue
        do { document = try JSONValue.parse(payload, maxObjectMembers: CompactJWT.maximumMembers) } catch { throw .malformed }
        guard let object = document.objectValue else { throw .malformed }
        guard let iss = object["iss"], let sub = object["sub"], let aud = object["aud"],
              let exp = object["exp"], let iat = object["iat"] else { throw .malformed }
        guard case .string(let subject) = sub, !subject.isEmpty else { throw .malformed }
        issuer = iss.stringValue
        self.subject = subject
        switch aud {
        case .string(let single): audiences = [single]
        case .array(let list):
            let strings = list.compactMap(\.stringValue)
            audiences = strings.count == list.count ? strings : nil
        default: audiences = nil
        }
        expiresAt = try Self.seconds(exp)
        issuedAt = try Self.seconds(iat)
        notBefore = try object["nbf"].map { value throws(IDTokenError) in try Self.seconds(value) }
        nonce = object["nonce"].map(\.stringValue)
        email = object["email"]?.stringValue
        switch object["email_verified"] {
        // Apple sent these as the strings "true" and "false" for years.
        case .bool(let flag)?: emailVerified = flag
        case .string("true")?: emailVerified = true
        case .string("false")?: emailVerified = false
        default: emailVerified = nil
        }
        self.object = object
    }

    /// A NumericDate (RFC 7519 section 2): an integer or a finite number within ±10^11 s.
    private static func seconds(_ value: JSONValue) throws(IDTokenError) -> Double {
        let seconds: Double
        switch value {
        case .int(let integer): seconds = Double(integer)
        case .number(let text): guard let parsed = Double(text) else { throw .malformed }; seconds = parsed
        default: throw .malformed
        }
        guard seconds.isFinite, abs(seconds) < 1e11 else { throw .malformed }
        return seconds
    }
}
