# embed_file.cmake -- `cmake -DIN=FILE -DOUT=FILE.c -DNAME=sym -P embed_file.cmake` writes a C file
# defining `const char sym[]` (the bytes of IN, NUL-terminated) and `const size_t sym_len`.
# Used for the server's web page (src/server/webui/index.html): no tool beyond CMake itself.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n2)
math(EXPR n "${n2} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/embed_file.cmake; do not edit. */\n"
     "#include <stddef.h>\n"
     "extern const char ${NAME}[];\n"
     "extern const size_t ${NAME}_len;\n"
     "const char ${NAME}[] = {\n${bytes}0x00\n};\n"
     "const size_t ${NAME}_len = ${n};\n")
