;; The scan behind the search snapshots' compact vectors (compact-vectors.ts), in WebAssembly SIMD: eight int8 codes
;; times eight int16 query components per instruction, where JavaScript multiplies one pair at a time. The bytes
;; compact-vectors.ts instantiates are this file assembled by wabt (test/unit/adapters/postgres/int8-dots.test.ts
;; assembles it again and compares).
(module
  (import "env" "memory" (memory 1))
  ;; For `rows` rows of `stride` int8 codes each (a multiple of 16), from `codes` on: the row's dot product with the
  ;; `stride` int16 components at `query`, written as an int32 at `out` (row by row). The caller keeps each sum within
  ;; int32 (its largest query component times 127 times `stride`).
  (func (export "dots") (param $query i32) (param $codes i32) (param $stride i32) (param $rows i32) (param $out i32)
    (local $end i32) (local $i i32) (local $acc v128) (local $v v128)
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $i (i32.const 0))
        ;; 16 codes a step: the low eight and the high eight widened to int16, each multiplied by its eight query
        ;; components and summed in pairs into four int32 lanes.
        (loop $chunk
          (local.set $v (v128.load (i32.add (local.get $codes) (local.get $i))))
          (local.set $acc (i32x4.add (local.get $acc)
            (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $v)) (v128.load (i32.add (local.get $query) (i32.shl (local.get $i) (i32.const 1)))))))
          (local.set $acc (i32x4.add (local.get $acc)
            (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $v)) (v128.load offset=16 (i32.add (local.get $query) (i32.shl (local.get $i) (i32.const 1)))))))
          (br_if $chunk (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 16))) (local.get $stride))))
        (i32.store (local.get $out)
          (i32.add (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
                   (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
        (local.set $codes (i32.add (local.get $codes) (local.get $stride)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $row)))))
