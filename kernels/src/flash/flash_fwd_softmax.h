// The per-key-block step of the forward's online softmax and the forward epilogue, shared by
// every forward kernel (mma.sync/MFMA in flash_fwd_kernel.h, wgmma in flash_fwd_wgmma_kernel.h).
// Both kernels hold, per warp, 16 query rows of S (4 accumulator tiles: 16 rows x 64 keys) and
// of O (D/16 tiles) in the tile-MMA layer's FragC layout, so this code sees one layout.
//  - online_softmax_step: masks keys >= n_valid, scales S into the exp2 domain, updates the
//    running max m and lane-partial sum l per row slot, rescales O, and leaves P = exp2(S - m)
//    in s (fp32; the caller rounds it to T when it becomes an MMA operand). It is
//    softmax_probs (everything but O) then rescale_output (O *= alpha), which the wgmma
//    forward calls apart, with the previous block's P·V in flight between them.
//  - store_forward_output: O / l in T for rows < seq_q, and the natural-log LSE (−inf, O = 0 for
//    a row with no key).
#pragma once

#include "flash_common.h"

namespace vidgraph::kernels::flash {

// Masks, scales and exponentiates S in place (P = exp2(S - m_new)), updates m and the
// lane-partial l, and returns in alpha the factor O must be rescaled by before P·V is added.
// Touches no O register, so a P·V of the previous block may still be in flight (wgmma forward).
VG_DEVICE void softmax_probs(mma::FragC (&s)[4], float (&m)[mma::kRowSlots],
                             float (&l)[mma::kRowSlots], float (&alpha)[mma::kRowSlots],
                             int n_valid, float scale_log2, int lane) {
  float mx[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) mx[r] = -INFINITY;
  for (int n = 0; n < 4; ++n) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int col = n * 16 + mma::c_col(lane, i);
      const float v = col < n_valid ? s[n].c[i] * scale_log2 : -INFINITY;
      s[n].c[i] = v;
      mx[mma::c_slot(i)] = fmaxf(mx[mma::c_slot(i)], v);
    }
  }
  float m_use[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    const float m_new = fmaxf(m[r], mma::row_max(mx[r]));
    m_use[r] = m_new == -INFINITY ? 0.f : m_new;
    alpha[r] = fast_exp2(m[r] - m_use[r]);
    m[r] = m_new;
    l[r] *= alpha[r];
  }
  for (int n = 0; n < 4; ++n) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const float pv = fast_exp2(s[n].c[i] - m_use[mma::c_slot(i)]);
      s[n].c[i] = pv;
      l[mma::c_slot(i)] += pv;  // lane-partial; reduced across the row at the end
    }
  }
}

template <int kDt>
VG_DEVICE void rescale_output(mma::FragC (&o)[kDt], const float (&alpha)[mma::kRowSlots]) {
  for (int dn = 0; dn < kDt; ++dn)
    for (int i = 0; i < mma::kCElems; ++i) o[dn].c[i] *= alpha[mma::c_slot(i)];
}

// The whole step for kernels that finish P·V before the next S (same bits as the split form).
template <int kDt>
VG_DEVICE void online_softmax_step(mma::FragC (&s)[4], mma::FragC (&o)[kDt],
                                   float (&m)[mma::kRowSlots], float (&l)[mma::kRowSlots],
                                   int n_valid, float scale_log2, int lane) {
  float alpha[mma::kRowSlots];
  softmax_probs(s, m, l, alpha, n_valid, scale_log2, lane);
  rescale_output<kDt>(o, alpha);
}

// row0: the first of the warp's 16 query rows in the sequence.
template <typename T, int kDt>
VG_DEVICE void store_forward_output(const FlashForwardParams& p, const mma::FragC (&o)[kDt],
                                    const float (&m)[mma::kRowSlots],
                                    float (&l)[mma::kRowSlots], int b, int h, int row0,
                                    int lane) {
  float inv[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    l[r] = mma::row_sum(l[r]);
    inv[r] = l[r] > 0.f ? 1.f / l[r] : 0.f;
  }
  for (int dn = 0; dn < kDt; ++dn) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int row = row0 + mma::c_row(lane, i);
      if (row < p.seq_q) {
        row_ptr_mut(p.o, b, row, h)[dn * 16 + mma::c_col(lane, i)] =
            Numeric<T>::from_float(o[dn].c[i] * inv[mma::c_slot(i)]);
      }
    }
  }
  if (mma::c_col(lane, 0) == 0) {
    for (int r = 0; r < mma::kRowSlots; ++r) {
      const int row = row0 + mma::slot_row(lane, r);
      if (row < p.seq_q) {
        p.lse[(int64_t(b) * p.heads + h) * p.seq_q + row] =
            l[r] > 0.f ? (m[r] + log2f(l[r])) * kLn2 : -INFINITY;
      }
    }
  }
}

}  // namespace vidgraph::kernels::flash
