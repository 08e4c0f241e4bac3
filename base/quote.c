#include "base/quote.h"

#include <stdio.h>

const char *quote_text(char *out, size_t size, char quote, const char *text, size_t len) {
    if (!size) return out;
    size_t used = 0, shown = len > QUOTE_SHOWN ? QUOTE_SHOWN : len;
#define PUT(...)                                                                           \
    do {                                                                                   \
        int w_ = snprintf(out + used, size - used, __VA_ARGS__);                           \
        used = w_ < 0 || (size_t)w_ >= size - used ? size - 1 : used + (size_t)w_;         \
    } while (0)
    PUT("%c", quote);
    for (size_t i = 0; i < shown && used + 1 < size; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') PUT("\\n");
        else if (c == '\t') PUT("\\t");
        else if (c == '\r') PUT("\\r");
        else if (c == '\\') PUT("\\\\");
        else if (c == (unsigned char)quote) PUT("\\%c", quote);
        else if (c < 0x20 || c >= 0x7f) PUT("\\x%02x", c);
        else PUT("%c", c);
    }
    if (shown < len) PUT("...%c (%zu characters)", quote, len);
    else PUT("%c", quote);
#undef PUT
    return out;
}
