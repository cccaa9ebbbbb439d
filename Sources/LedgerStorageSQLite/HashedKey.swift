/// A string used as a dictionary key, with its hash computed once.
///
/// The writer looks a household's id up in several dictionaries per write (its change
/// sequence, its ledger key, its access records, the id index), and hashing a 36-byte id
/// each time costs more than the lookup. A `HashedKey` carries the string's own
/// seeded hash (`hashValue`, so keys chosen by clients do not collide any more than
/// strings do), and a dictionary keyed by it hashes one word. `KeyMemo` hands out the same
/// key again while the same id comes back, as it does through the statements of one write.
struct HashedKey: Hashable, Sendable {
    let string: String
    private let hash: Int

    init(_ string: String) {
        self.string = string
        hash = string.hashValue
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    static func == (a: HashedKey, b: HashedKey) -> Bool { a.hash == b.hash && a.string == b.string }
}

/// The key of the last string asked for, kept: asking again for an equal string costs no
/// hash. The key keeps the first of the equal strings (the one the dictionaries hold, so
/// their lookups compare a string with itself); the last one asked for is kept apart
/// (`asked`): a write names its household by one string through all its statements, and
/// comparing a string with itself reads no bytes.
struct KeyMemo {
    private var last: HashedKey?
    /// The string last asked for: equal to `last`'s, not always the same stored string.
    private var asked = ""

    mutating func key(_ string: String) -> HashedKey {
        if let last, asked == string {
            asked = string
            return last
        }
        let key = HashedKey(string)
        last = key
        asked = string
        return key
    }
}
