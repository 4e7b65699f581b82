//! The memory bound holds only if the allocator really records: an
//! allocation shows up, and a property that allocates past its limit fails.

use konane_fuzzing::{LargestAllocation, fuzz_bounded, largest_allocation, reset_largest_allocation};

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

#[test]
fn the_largest_allocation_is_recorded_and_bounded() {
    reset_largest_allocation();
    let block = std::hint::black_box(vec![0u8; 3 << 20]);
    assert!(largest_allocation() >= 3 << 20, "recorded {}", largest_allocation());
    drop(block);
    reset_largest_allocation();
    assert!(largest_allocation() < 3 << 20);

    fuzz_bounded(
        "within",
        20,
        1usize..1000,
        |&n| n + 64,
        |&n| {
            std::hint::black_box(vec![1u8; n]);
            Ok(())
        },
    );
    let over = std::panic::catch_unwind(|| {
        fuzz_bounded(
            "over",
            20,
            1000usize..2000,
            |_| 100,
            |&n| {
                std::hint::black_box(vec![1u8; n]);
                Ok(())
            },
        )
    });
    assert!(over.is_err(), "a 1,000-byte allocation passed a 100-byte bound");
}
