/// A binary min-heap of connection deadlines for one event loop.
///
/// Entries are checked lazily: the loop compares a popped entry with the connection's
/// current deadline, so moving a deadline later costs nothing and the heap holds at most
/// a few entries per connection.
struct TimerHeap: Sendable {
    struct Entry: Sendable {
        var deadline: Double
        var fd: Int32
        var connectionID: UInt64
    }

    private var items: [Entry] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var first: Entry? { items.first }

    mutating func push(_ entry: Entry) {
        items.append(entry)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if items[parent].deadline <= items[i].deadline { break }
            items.swapAt(parent, i)
            i = parent
        }
    }

    mutating func pop() -> Entry? {
        guard !items.isEmpty else { return nil }
        let top = items[0]
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            let n = items.count
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < n, items[l].deadline < items[m].deadline { m = l }
                if r < n, items[r].deadline < items[m].deadline { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
