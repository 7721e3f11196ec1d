// Quantize 32 floats with TransformerEngine's NVFP4 recipe and print the buffers.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <kvq/block.hpp>

int main() {
  namespace kb = kvq::block;
  // Two 16-element blocks: block 1 is block 0 halved, so it gets a smaller scale.
  std::vector<float> x = {6, -6, 4, -4, 3, -3, 2, -2, 1.5f, -1.5f, 1, -1, 0.5f, -0.5f, 0, -0.0f};
  for (int i = 0; i < 16; ++i) x.push_back(x[i] / 2);

  const kb::nvfp4_te s;
  const kb::buffer_sizes z = kb::sizes_of(s, x.size());  // 16 code bytes, 2 scales
  std::vector<std::uint8_t> codes(z.code_bytes), scales(z.scales);
  const float amax = kb::quantize(s, x.data(), x.size(), kb::tensor_value::computed(),
                                  codes.data(), codes.size(), scales.data(), scales.size());

  std::vector<float> back(x.size());
  kb::dequantize(s, codes.data(), codes.size(), scales.data(), scales.size(),
                 /*zeros*/ nullptr, 0, /*tensor value*/ amax, back.data(), back.size());

  std::printf("tensor amax %g\ncodes", amax);
  for (std::uint8_t c : codes) std::printf(" %02x", c);
  std::printf("\nscales");
  for (std::uint8_t c : scales) std::printf(" %02x", c);
  std::printf("\nbytes %zu\nback", z.total_bytes());
  for (float v : back) std::printf(" %g", v);
  std::printf("\n");

  // The same through the owning container.
  kb::quantized_tensor<kb::nvfp4_te> q;
  q.assign(x.data(), x.size());
  std::printf("quantized_tensor: %zu bytes, same codes: %s\n", q.memory_bytes(),
              q.codes() == codes ? "yes" : "no");
}
