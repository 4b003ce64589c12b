// fmt's compiled part, built once into kiln_rt for every kiln library, tool and test.
//
// fmt "header-only" puts its formatting engine (float formatting, vformat, print) into every
// translation unit that includes <fmt/format.h>: about 4 s of -O0 and 8 s of -O2 compile time
// per file, most of kiln's build. kiln's own sources therefore include fmt without
// FMT_HEADER_ONLY and this file supplies the out-of-line definitions and the instantiations
// that <fmt/format.h> declares extern. kiln still needs no libfmt at run time (the GPU machine
// has none); programs built against an installed kiln get FMT_HEADER_ONLY from kiln's CMake
// package, as fmt's own header-only target gives it (docs/embedding.md).
#ifdef FMT_HEADER_ONLY
#error "kiln builds fmt's implementation here; do not define FMT_HEADER_ONLY in kiln's build"
#endif
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float value) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double value) noexcept
    -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale &locale);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

} // namespace detail
FMT_END_NAMESPACE
