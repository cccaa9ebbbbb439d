/// Command-line words split into positionals, valued options and flags.
struct Arguments {
    static let valued: Set<String> = ["--store", "--server", "--note", "--source", "--name", "--handle",
                                      "--device-name", "--token", "--out", "--provider", "--id-token", "--nonce",
                                      "--code", "--confirm", "--seconds", "--every", "--first", "--time-zone", "--end", "--rate",
                                      "--target", "--by", "--child"]
    static let flags: Set<String> = ["--json", "--yes", "--watch", "--read-only", "--replace-local", "--no-sync",
                                     "--help", "--pinned", "--revoke-others", "--delete-shared",
                                     "--back-pay", "--all"]

    var positionals: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    /// A usage mistake: reported with exit status 2.
    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    init(_ words: [String]) throws {
        var i = 0
        var literal = false
        while i < words.count {
            let word = words[i]
            i += 1
            if literal || !word.hasPrefix("--") {
                positionals.append(word)
                continue
            }
            if word == "--" { literal = true; continue }
            var name = word
            var inline: String?
            if let eq = word.firstIndex(of: "=") {
                name = String(word[..<eq])
                inline = String(word[word.index(after: eq)...])
            }
            if Self.valued.contains(name) {
                if let inline { options[name] = inline; continue }
                guard i < words.count else { throw UsageError(description: "\(name) needs a value") }
                options[name] = words[i]
                i += 1
            } else if Self.flags.contains(name), inline == nil {
                flags.insert(name)
            } else {
                throw UsageError(description: "unknown option \(word)")
            }
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func option(_ name: String) -> String? { options[name] }

    /// The positional at `index`, or a usage error naming `what`.
    func positional(_ index: Int, _ what: String) throws -> String {
        guard index < positionals.count else { throw UsageError(description: "missing \(what)") }
        return positionals[index]
    }

    /// Refuses positionals beyond `count`.
    func expectPositionals(_ count: Int) throws {
        if positionals.count > count {
            throw UsageError(description: "unexpected argument '\(positionals[count])'")
        }
    }
}
