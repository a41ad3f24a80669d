import Testing
import UV
@testable import OutaTimeServer

@Suite("scheduler")
struct SchedulerTests {
    @Test func heapPopsInDeadlineOrderAndSkipsRescheduledAndCancelledKeys() {
        var heap = DeadlineHeap<String>()
        heap.schedule("c", at: 30)
        heap.schedule("a", at: 10)
        heap.schedule("b", at: 20)
        heap.schedule("a", at: 25)   // replaces a@10
        heap.cancel("b")
        #expect(heap.count == 2)
        #expect(heap.earliest() == 25)
        #expect(heap.popDue(now: 24) == nil)
        #expect(heap.popDue(now: 100) == "a")
        #expect(heap.popDue(now: 100) == "c")
        #expect(heap.popDue(now: 100) == nil)
        #expect(heap.count == 0)
    }

    @Test func equalDeadlinesKeepSchedulingOrder() {
        var heap = DeadlineHeap<Int>()
        for key in 0..<50 { heap.schedule(key, at: 5) }
        var popped = [Int]()
        while let key = heap.popDue(now: 5) { popped.append(key) }
        #expect(popped == Array(0..<50))
    }

    @Test func manyCancellationsDoNotLeakEntries() {
        var heap = DeadlineHeap<Int>()
        for round in 0..<1000 { heap.schedule(round % 10, at: UInt64(1000 - round)) }
        #expect(heap.count == 10)
        var popped = 0
        while heap.popDue(now: .max) != nil { popped += 1 }
        #expect(popped == 10)
    }

    @Test func oneTimerWakesKeysInOrderOnARealLoop() throws {
        let loop = try Loop()
        let scheduler = Scheduler<String>(loop: loop, clock: ServerClock(loop: loop))
        var woke = [String]()
        let guardTimer = UV.Timer(loop: loop)
        scheduler.onDue = { key, now in
            woke.append(key)
            if key == "third" { scheduler.schedule("again", at: now + 1) }
            if key == "again" {
                scheduler.close()
                guardTimer.close()
            }
        }
        let start = loop.now
        scheduler.schedule("third", at: start + 30)
        scheduler.schedule("first", at: start + 5)
        scheduler.schedule("second", at: start + 15)
        scheduler.schedule("cancelled", at: start + 10)
        scheduler.cancel("cancelled")
        guardTimer.start(timeoutMs: 2000) {  // bounds the test if a wake-up is lost
            scheduler.close()
            guardTimer.close()
        }
        loop.run()
        #expect(woke == ["first", "second", "third", "again"])
        try loop.close()
    }
}
