import Synchronization
import UV

/// The inboxes of every worker, filled once all threads have started; each
/// scenario has its own `Order` type.
final class WorkerDirectory<Order: Sendable>: Sendable {
    private let senders = Mutex<[InboxSender<Order>]>([])

    func register(_ sender: InboxSender<Order>, at index: Int) {
        senders.withLock { list in
            while list.count <= index { list.append(sender) }
            list[index] = sender
        }
    }

    /// Posts `order` to worker `index` (no-op if it is not registered yet).
    func post(_ order: Order, to index: Int) {
        let sender = senders.withLock { $0.indices.contains(index) ? $0[index] : nil }
        sender?.post(order)
    }

    /// Posts `order` to every worker.
    func broadcast(_ order: Order) {
        for sender in senders.withLock({ $0 }) { sender.post(order) }
    }
}
