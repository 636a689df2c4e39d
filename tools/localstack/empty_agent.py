"""Write a Java agent jar that does nothing: LocalStack starts DynamoDB Local with `-javaagent:` for its patch
jar (downloaded from GitHub at first use), and the JVM refuses an agent without a Premain-Class.

The class is written byte by byte (no JDK compiler needed, a JRE runs it):
`public class PgarenaNoAgent { public static void premain(String args) {} }`, class file version 52.
"""

import struct
import sys
import zipfile

CLASS = "PgarenaNoAgent"


def _utf8(text: str) -> bytes:
    data = text.encode()
    return b"\x01" + struct.pack(">H", len(data)) + data


def class_file() -> bytes:
    pool = [
        _utf8(CLASS),  # 1
        b"\x07" + struct.pack(">H", 1),  # 2: this class
        _utf8("java/lang/Object"),  # 3
        b"\x07" + struct.pack(">H", 3),  # 4: its superclass
        _utf8("premain"),  # 5
        _utf8("(Ljava/lang/String;)V"),  # 6
        _utf8("Code"),  # 7
    ]
    code = struct.pack(">HHI", 0, 1, 1) + b"\xb1" + struct.pack(">HH", 0, 0)  # max stack 0, 1 local; `return`
    method = struct.pack(">HHHH", 0x0009, 5, 6, 1) + struct.pack(">HI", 7, len(code)) + code  # public static
    return (
        b"\xca\xfe\xba\xbe"
        + struct.pack(">HHH", 0, 52, len(pool) + 1)
        + b"".join(pool)
        + struct.pack(">HHHHHH", 0x0021, 2, 4, 0, 0, 1)  # public super; no interfaces, no fields; one method
        + method
        + struct.pack(">H", 0)  # no class attributes
    )


def main(path: str) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\r\nPremain-Class: {CLASS}\r\n\r\n")
        jar.writestr(f"{CLASS}.class", class_file())


if __name__ == "__main__":
    main(sys.argv[1])
