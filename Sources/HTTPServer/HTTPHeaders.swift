/// An ordered list of header fields with case-insensitive lookup by name.
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name` (ASCII case-insensitive), or nil.
    public subscript(_ name: String) -> String? {
        // Lengths compared here first: most fields differ in length, and the comparison is
        // a call otherwise (about 45 instructions a field).
        let count = name.utf8.count
        for field in fields where field.name.utf8.count == count && field.name.caseInsensitiveEquals(name) {
            return field.value
        }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Makes room for `n` fields in all.
    public mutating func reserveCapacity(_ n: Int) { fields.reserveCapacity(n) }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field of `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        if contains(name) { remove(name) }
        fields.append((name, value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    public var count: Int { fields.count }

    /// Whether both are copies of one list of fields, never changed since (so every field is
    /// the same): one comparison of two addresses, no field read. False says nothing about
    /// the fields of lists that were built apart. Both values hold their storage while they
    /// are compared, so an address cannot be another list's.
    @inlinable
    public func sharesStorage(with other: HTTPHeaders) -> Bool {
        fields.withUnsafeBufferPointer { a in
            other.fields.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress && a.count == b.count }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive equality, as HTTP field names need.
    @inlinable
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        // Most names differ in length: no byte is read then (utf8.count is O(1) for
        // native strings).
        guard self.utf8.count == other.utf8.count else { return false }
        let fast = self.utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b -> Bool in
                for i in 0..<a.count {
                    let x = a[i], y = b[i]
                    if x == y { continue }
                    let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
                    let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
                    if lx != ly { return false }
                }
                return true
            }
        }
        if let fast, let equal = fast { return equal }
        var a = self.utf8.makeIterator()
        var b = other.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
                let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
                if lx != ly { return false }
            default: return false
            }
        }
    }
}
