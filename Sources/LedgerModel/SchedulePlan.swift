/// What a schedule pays at one instant (`ScheduleState.plan(atMs:)`).
public struct SchedulePlan: Hashable, Sendable {
    /// The due dates to pay now with the current terms, oldest first: each as one payment
    /// (`ScheduleIDs.payment`) created at its due instant. At most the plan's cap.
    public var pay: [LocalDate]
    /// Due dates left unpaid by the cap, oldest first after `pay`: the next plan pays them.
    public var deferred: Int
    /// Due dates held while the schedule is paused: skipped when it resumes, or paid then
    /// if the resuming edit asks for back pay. 0 unless paused.
    public var held: Int
    /// The next date to pay after `pay` (a deferred one, or the first not yet due); nil
    /// while paused and when the schedule has ended. The schedule's `nextDueDate`.
    public var nextDueDate: LocalDate?

    public init(pay: [LocalDate] = [], deferred: Int = 0, held: Int = 0, nextDueDate: LocalDate? = nil) {
        self.pay = pay
        self.deferred = deferred
        self.held = held
        self.nextDueDate = nextDueDate
    }
}
