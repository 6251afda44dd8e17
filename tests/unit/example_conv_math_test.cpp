// The host arithmetic of examples/halo_conv: the slab split and its refusals, the binomial
// filter, the per-pixel convolution (a delta reproduces the filter, zero padding at the edges, a
// constant stays constant away from them), the kernel's band order, the starting image (pinned to
// the values NumPy computes, which tests/python/test_example_conv.py relies on), and slabs with
// halos copied by hand against the serial convolution, bit for bit.
//
//   g++ -std=c++20 -I include -I examples tests/unit/example_conv_math_test.cpp -lgtest -lgtest_main
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../../examples/halo_conv/conv_problem.hpp"

namespace cv = axon::examples::conv;

namespace {

// A one-PE local image of h x w whose owned pixels are `value` (ghosts and padding zero).
std::vector<float> constantImage(const cv::Layout& l, float value) {
  std::vector<float> img(l.cells(), 0.0f);
  for (long o = 0; o < l.rows; ++o)
    for (long c = 0; c < l.width; ++c) img[l.at(o, c)] = value;
  return img;
}

}  // namespace

TEST(ConvMath, SlabsCoverEveryRowOnceAndDifferByAtMostOne) {
  for (long h = 1; h <= 60; ++h)
    for (int pes = 1; pes <= std::min<long>(h, 8); ++pes) {
      long next = 0, smallest = h, largest = 0;
      for (int pe = 0; pe < pes; ++pe) {
        const cv::Slab s = cv::slabOf(h, pes, pe);
        EXPECT_EQ(s.first, next) << "h " << h << " pes " << pes << " pe " << pe;
        next = s.first + s.rows;
        smallest = std::min(smallest, s.rows);
        largest = std::max(largest, s.rows);
      }
      EXPECT_EQ(next, h);
      EXPECT_LE(largest - smallest, 1);
      EXPECT_EQ(cv::decompose(h, 5, 1, pes, 0).layout.maxRows, largest);  // the symmetric size fits all
    }
}

TEST(ConvMath, DecomposeNamesNeighboursAndRefusesThinSlabs) {
  const cv::Decomposition mid = cv::decompose(10, 7, 5, 3, 1);
  EXPECT_EQ(mid.up, 0);
  EXPECT_EQ(mid.down, 2);
  EXPECT_EQ(mid.slab.first, 4);
  EXPECT_EQ(mid.slab.rows, 3);
  EXPECT_EQ(mid.rowsOf(0), 4);
  EXPECT_EQ(mid.layout.radius(), 2);
  EXPECT_EQ(mid.layout.cols(), 11);
  EXPECT_EQ(mid.layout.cells(), static_cast<std::size_t>((4 + 4) * 11));
  EXPECT_EQ(mid.layout.haloBytes(), 2 * 11 * sizeof(float));
  EXPECT_EQ(cv::decompose(10, 7, 5, 3, 0).up, -1);
  EXPECT_EQ(cv::decompose(10, 7, 5, 3, 2).down, -1);
  EXPECT_THROW(cv::decompose(2, 7, 1, 3, 0), std::invalid_argument);  // more PEs than rows
  EXPECT_THROW(cv::decompose(0, 7, 1, 1, 0), std::invalid_argument);
  EXPECT_THROW(cv::decompose(7, 0, 1, 1, 0), std::invalid_argument);
  // 11 rows over 3 PEs: slabs of 4, 4, 3; a 9x9 filter needs 4 rows from each neighbour.
  EXPECT_NO_THROW(cv::decompose(11, 7, 7, 3, 0));
  try {
    cv::decompose(11, 7, 9, 3, 0);
    ADD_FAILURE() << "slabs of 3 rows under a 9x9 filter were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("thinner than the 4 halo rows"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(cv::decompose(2, 7, 15, 1, 0));  // one PE: no halos, any filter
}

TEST(ConvMath, FilterIsPositiveSymmetricAndSumsToOneExactly) {
  for (int k = 1; k <= cv::kMaxFilter; k += 2) {
    const cv::Filter f = cv::binomialFilter(k);
    ASSERT_EQ(f.k, k);
    double sum = 0;
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        const float w = f.w[i * k + j];
        EXPECT_GT(w, 0.0f);
        EXPECT_EQ(w, f.w[j * k + i]);                      // transposed
        EXPECT_EQ(w, f.w[(k - 1 - i) * k + (k - 1 - j)]);  // turned
        sum += w;
      }
    EXPECT_EQ(sum, 1.0) << "k " << k;  // every weight is a dyadic fraction: no rounding anywhere
  }
  EXPECT_EQ(cv::binomialFilter(3).w[4], 0.25f);
  EXPECT_EQ(cv::binomialFilter(5).w[0], 1.0f / 256);
  for (int bad : {0, 2, 4, 16, 17, -1}) EXPECT_THROW(cv::binomialFilter(bad), std::invalid_argument) << bad;
}

TEST(ConvMath, ADeltaReproducesTheFilter) {
  for (int k : {1, 3, 5, 7}) {
    const cv::Decomposition d = cv::decompose(15, 13, k, 1, 0);
    const cv::Layout& l = d.layout;
    const cv::Filter f = cv::binomialFilter(k);
    const int r = l.radius();
    std::vector<float> in(l.cells(), 0.0f), out(l.cells(), -1.0f);
    const long y = 6, x = 5;
    in[l.at(y, x)] = 1.0f;
    cv::convolveRows(in.data(), out.data(), l, f, 0, l.rows);
    for (long o = 0; o < l.rows; ++o)
      for (long c = 0; c < l.width; ++c) {
        const long i = y - o + r, j = x - c + r;  // the tap that lands on the delta
        const float want = (i >= 0 && i < k && j >= 0 && j < k) ? f.w[i * k + j] : 0.0f;
        EXPECT_EQ(out[l.at(o, c)], want) << "k " << k << " at " << o << "," << c;
      }
  }
}

TEST(ConvMath, ZeroPaddingOutsideTheImage) {
  // One layer over a constant image: each pixel is the sum of the weights that fall inside.
  const cv::Decomposition d = cv::decompose(9, 8, 5, 1, 0);
  const cv::Layout& l = d.layout;
  const cv::Filter f = cv::binomialFilter(5);  // 1 4 6 4 1 / 16 each way
  std::vector<float> in = constantImage(l, 1.0f), out(l.cells(), 0.0f);
  cv::convolveRows(in.data(), out.data(), l, f, 0, l.rows);
  EXPECT_EQ(out[l.at(0, 0)], (11.0f / 16) * (11.0f / 16));  // corner: 2 of 5 rows and columns outside
  EXPECT_EQ(out[l.at(1, 0)], (15.0f / 16) * (11.0f / 16));  // one row outside, 2 columns
  EXPECT_EQ(out[l.at(8, 7)], (11.0f / 16) * (11.0f / 16));
  EXPECT_EQ(out[l.at(4, 4)], 1.0f);
  // The padding and ghost cells of the output are never written.
  EXPECT_EQ(out[l.at(-1, 3)], 0.0f);
  EXPECT_EQ(out[l.at(3, -1)], 0.0f);
  EXPECT_EQ(out[l.at(3, 8)], 0.0f);
}

TEST(ConvMath, AConstantStaysConstantAwayFromTheEdges) {
  const long h = 30, w = 28, layers = 4;
  const cv::Decomposition d = cv::decompose(h, w, 3, 1, 0);
  const cv::Layout& l = d.layout;
  const cv::Filter f = cv::binomialFilter(3);
  std::vector<float> a = constantImage(l, 0.75f), b(l.cells(), 0.0f);
  for (long k = 0; k < layers; ++k) {
    cv::convolveRows(a.data(), b.data(), l, f, 0, l.rows);
    std::swap(a, b);
  }
  // The padding reaches R rows and columns further in each layer.
  for (long o = 0; o < h; ++o)
    for (long c = 0; c < w; ++c) {
      const float v = a[l.at(o, c)];
      if (o >= layers && o < h - layers && c >= layers && c < w - layers) EXPECT_EQ(v, 0.75f) << o << "," << c;
      else EXPECT_LT(v, 0.75f) << o << "," << c;
    }
}

TEST(ConvMath, StartingImageMatchesNumPyAndStaysInTheUnitInterval) {
  // The values test_example_conv.py's NumPy version of initialPixel gives.
  EXPECT_EQ(cv::initialPixel(0, 0), 0.0f);
  EXPECT_EQ(cv::initialPixel(0, 1), 0x1.1941f4p-2f);
  EXPECT_EQ(cv::initialPixel(1, 0), 0x1.02f82p-3f);
  EXPECT_EQ(cv::initialPixel(123, 4567), 0x1.77867ap-1f);
  EXPECT_EQ(cv::initialPixel(8191, 8191), 0x1.889aecp-1f);
  std::set<float> seen;
  for (long r = 0; r < 40; ++r)
    for (long c = 0; c < 40; ++c) {
      const float v = cv::initialPixel(r, c);
      EXPECT_GE(v, 0.0f);
      EXPECT_LT(v, 1.0f);
      seen.insert(v);
    }
  EXPECT_GT(seen.size(), 1500u);  // not constant, hardly a repeat
}

TEST(ConvMath, KernelVisitsEveryBandOnceTheEdgesLast) {
  for (long bands = 1; bands <= 20; ++bands) {
    std::set<long> seen;
    for (long step = 0; step < bands; ++step) seen.insert(cv::bandAtStep(step, bands));
    EXPECT_EQ(static_cast<long>(seen.size()), bands);
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), bands - 1);
    if (bands > 2) {
      EXPECT_EQ(cv::bandAtStep(bands - 2, bands), 0);
      EXPECT_EQ(cv::bandAtStep(bands - 1, bands), bands - 1);
    }
  }
}

// The decomposition and the halo offsets the modes use, with the rows copied by hand (what the
// exchanges do), give the serial result bit for bit.
TEST(ConvMath, SlabsWithHalosMatchTheSerialConvolution) {
  const long h = 23, w = 17, layers = 5;
  for (int k : {1, 3, 5, 7})
    for (int pes : {1, 2, 3, 5}) {
      if (h / pes < k / 2) continue;
      const std::vector<float> want = cv::convolveSerial(h, w, k, layers);
      const cv::Filter f = cv::binomialFilter(k);
      std::vector<cv::Decomposition> ds;
      std::vector<std::vector<float>> a, b;
      for (int pe = 0; pe < pes; ++pe) {
        ds.push_back(cv::decompose(h, w, k, pes, pe));
        a.emplace_back(ds.back().layout.cells());
        b.emplace_back(ds.back().layout.cells());
        cv::initialise(a.back().data(), ds.back());
        cv::initialise(b.back().data(), ds.back());
      }
      for (long layer = 0; layer < layers; ++layer) {
        auto& in = layer % 2 ? b : a;
        auto& out = layer % 2 ? a : b;
        for (int pe = 0; pe < pes; ++pe) {  // this PE's edge rows into its neighbours' ghost rows
          const cv::Decomposition& d = ds[pe];
          const cv::Layout& l = d.layout;
          const int r = l.radius();
          const std::size_t n = l.haloBytes() / sizeof(float);
          if (d.up >= 0) std::copy_n(in[pe].data() + l.at(0, -r), n, in[d.up].data() + l.at(d.rowsOf(d.up), -r));
          if (d.down >= 0) std::copy_n(in[pe].data() + l.at(l.rows - r, -r), n, in[d.down].data() + l.at(-r, -r));
        }
        for (int pe = 0; pe < pes; ++pe) cv::convolveRows(in[pe].data(), out[pe].data(), ds[pe].layout, f, 0, ds[pe].slab.rows);
      }
      std::vector<float> got;
      for (int pe = 0; pe < pes; ++pe) {
        const std::vector<float> mine = cv::ownedPixels((layers % 2 ? b : a)[pe].data(), ds[pe].layout);
        got.insert(got.end(), mine.begin(), mine.end());
      }
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "k " << k << " pes " << pes;
    }
}
