import Synchronization

/// Whether a storage's commits queue push wakes: on only while a push gateway is configured,
/// so a server without push spends nothing on them per commit.
package final class PushWakeSwitch: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}

    package var isOn: Bool { value.load(ordering: .relaxed) }

    package func set(_ on: Bool) { value.store(on, ordering: .relaxed) }
}
