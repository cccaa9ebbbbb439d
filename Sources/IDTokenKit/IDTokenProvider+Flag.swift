extension IDTokenProvider {
    /// The members of an `--oidc-provider` value.
    private static let flagKeys = ["name", "issuer", "audience", "jwks"]

    /// Reads an `--oidc-provider` value: `name=N,issuer=URL,audience=A[;A…],jwks=URL|FILE`,
    /// each member once, in any order. A comma not followed by one of those keys and `=` is
    /// part of the value before it (URLs may hold commas). `name` may not be `apple`, the
    /// built-in provider (`--apple-client-id`, `--apple-jwks`).
    public init(flag: String) throws(ProviderSpecError) {
        var members: [String: String] = [:]
        var order: [String] = []
        for piece in flag.split(separator: ",", omittingEmptySubsequences: false) {
            let key = piece.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            if piece.contains("="), Self.flagKeys.contains(key) {
                guard members[key] == nil else { throw Self.flagError(flag, "\(key)= is given twice") }
                members[key] = String(piece.dropFirst(key.count + 1))
                order.append(key)
            } else if let last = order.last {
                members[last, default: ""] += "," + piece
            } else {
                throw Self.flagError(flag, "expected name=, issuer=, audience= and jwks=, got \"\(piece)\"")
            }
        }
        for key in Self.flagKeys where members[key] == nil { throw Self.flagError(flag, "\(key)= is missing") }
        for key in Self.flagKeys where members[key]!.isEmpty { throw Self.flagError(flag, "\(key)= is empty") }
        let name = members["name"]!
        guard name != Self.appleName else {
            throw Self.flagError(flag, "apple is the built-in provider: use --apple-client-id and --apple-jwks")
        }
        let audiences = members["audience"]!.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        do {
            try self.init(name: name, issuer: members["issuer"]!, audiences: audiences,
                          keySet: try KeySetLocation(parsing: members["jwks"]!))
        } catch {
            throw Self.flagError(flag, error.message)
        }
    }

    private static func flagError(_ flag: String, _ message: String) -> ProviderSpecError {
        ProviderSpecError("--oidc-provider \(flag): \(message)")
    }
}
