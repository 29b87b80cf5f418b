"""Kokoro voice packs in the layouts users have them, read without executing pickled code, and checked.

Three layouts hold the same thing, a float32 table of ``[510, 1, 256]`` style vectors per voice:

- the model repository's ``voices/<name>.pt`` (``hexgrad/Kokoro-82M``): a PyTorch zip archive whose one
  ``<folder>/data/0`` entry is the tensor's raw little-endian float32 storage (the folder is not always the voice's
  name: ``jm_kumo.pt`` holds ``jm_omega/data/0``). :func:`read_pt` reads that entry and walks the archive's pickle
  with :mod:`pickletools` (which only lists opcodes; nothing is executed) to check dtype, shape and strides.
- kokoro-onnx's ``voices-v1.0.bin`` and the ``.npz`` the server ships (``voices_ja.npz``): numpy archives of
  name → array, read with ``allow_pickle=False``.
- what ``kokoro-server voices install`` writes for a pack that came from an archive: ``<name>.npy``.

The 54 official v1.0 packs are pinned twice: :data:`OFFICIAL_SHA256` is the SHA-256 of each published ``.pt`` file
(the model repository's, what a download must match), :data:`OFFICIAL_TABLE_SHA256` the SHA-256 of its float32
table (the ``data/0`` bytes), so that a pack taken from an archive can be checked too. A pack of an official name
whose digest differs is refused; a pack of any other name is accepted after the shape check and is *unofficial*.

This module is light (numpy and the standard library): ``kokoro-server voices`` loads no inference stack.
"""

from __future__ import annotations

import hashlib
import pickletools
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import numpy.typing as npt

from kokoro_server.engines.errors import ModelFilesError
from relay_core.languages import language_of_voice

STYLE_ROWS = 510
STYLE_DIM = 256
TABLE_BYTES = STYLE_ROWS * STYLE_DIM * 4
"""The bytes of one voice's float32 table."""

FloatArray = npt.NDArray[np.float32]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A voice name a pack file may have (its file name without the suffix)."""

GENDER_NAMES = {"f": "female", "m": "male"}

PREFERRED_DEFAULT_VOICES = ("af_heart", "jf_alpha")
"""The default voice is the first of these that the voices have, else the first voice by name: af_heart once the
English packs are installed, jf_alpha with the embedded Japanese ones only."""

OFFICIAL_SHA256: Mapping[str, str] = {
    "af_alloy": "6d877149dd8b348fbad12e5845b7e43d975390e9f3b68a811d1d86168bef5aa3",
    "af_aoede": "c03bd1a4c3716c2d8eaa3d50022f62d5c31cfbd6e15933a00b17fefe13841cc4",
    "af_bella": "8cb64e02fcc8de0327a8e13817e49c76c945ecf0052ceac97d3081480e8e48d6",
    "af_heart": "0ab5709b8ffab19bfd849cd11d98f75b60af7733253ad0d67b12382a102cb4ff",
    "af_jessica": "cdfdccb8cc975aa34ee6b89642963b0064237675de0e41a30ae64cc958dd4e87",
    "af_kore": "8bfbc512321c3db49dff984ac675fa5ac7eaed5a96cc31104d3a9080e179d69d",
    "af_nicole": "c5561808bcf5250fe8c5f5de32caf2d94f27e57e95befdb098c5c85991d4c5da",
    "af_nova": "e0233676ddc21908c37a1f102f6b88a59e4e5c1bd764983616eb9eda629dbcd2",
    "af_river": "e149459bd9c084416b74756b9bd3418256a8b839088abb07d463730c369dab8f",
    "af_sarah": "49bd364ea3be9eb3e9685e8f9a15448c4883112a7c0ff7ab139fa4088b08cef9",
    "af_sky": "c799548aed06e0cb0d655a85a01b48e7f10484d71663f9a3045a5b9362e8512c",
    "am_adam": "ced7e284aba12472891be1da3ab34db84cc05cc02b5889535796dbf2d8b0cb34",
    "am_echo": "8bcfdc852bc985fb45c396c561e571ffb9183930071f962f1b50df5c97b161e8",
    "am_eric": "ada66f0eefff34ec921b1d7474d7ac8bec00cd863c170f1c534916e9b8212aae",
    "am_fenrir": "98e507eca1db08230ae3b6232d59c10aec9630022d19accac4f5d12fcec3c37a",
    "am_liam": "c82550757ddb31308b97f30040dda8c2d609a9e2de6135848d0a948368138518",
    "am_michael": "9a443b79a4b22489a5b0ab7c651a0bcd1a30bef675c28333f06971abbd47bd37",
    "am_onyx": "e8452be16cd0f6da7b4579eaf7b1e4506e92524882053d86d72b96b9a7fed584",
    "am_puck": "dd1d8973f4ce4b7d8ae407c77a435f485dabc052081b80ea75c4f30b84f36223",
    "am_santa": "7f2f7582fa2b1f160e90aafe6d0b442a685e773608b6667e545d743b073e97a7",
    "bf_alice": "d292651b6af6c0d81705c2580dcb4463fccc0ff7b8d618a471dbb4e45655b3f3",
    "bf_emma": "d0a423deabf4a52b4f49318c51742c54e21bb89bbbe9a12141e7758ddb5da701",
    "bf_isabella": "cdd4c37003805104d1d08fb1e05855c8fb2c68de24ca6e71f264a30aaa59eefd",
    "bf_lily": "6e09c2e481e2d53004d7e5ae7d3a325369e130a6f45c35a6002de75084be9285",
    "bm_daniel": "fc3fce4e9c12ed4dbc8fa9680cfe51ee190a96444ce7c3ad647549a30823fc5d",
    "bm_fable": "d44935f3135257a9064df99f007fc1342ff1aa767552b4a4fa4c3b2e6e59079c",
    "bm_george": "f1bc812213dc59774769e5c80004b13eeb79bd78130b11b2d7f934542dab811b",
    "bm_lewis": "b5204750dcba01029d2ac9cec17aec3b20a6d64073c579d694a23cb40effbd0e",
    "ef_dora": "d9d69b0f8a2b87a345f269d89639f89dfbd1a6c9da0c498ae36dd34afcf35530",
    "em_alex": "5eac53f767c3f31a081918ba531969aea850bed18fe56419b804d642c6973431",
    "em_santa": "aa8620cb96cec705823efca0d956a63e158e09ad41aca934d354b7f0778f63cb",
    "ff_siwis": "8073bf2d2c4b9543a90f2f0fd2144de4ed157e2d4b79ddeb0d5123066171fbc9",
    "hf_alpha": "06906fe05746d13a79c5c01e21fd7233b05027221a933c9ada650f5aafc8f044",
    "hf_beta": "63c0a1a6272e98d43f4511bba40e30dd9c8ceaf5f39af869509b9f51a71c503e",
    "hm_omega": "b55f02a8e8483fffe0afa566e7d22ed8013acf47ad4f6bbee2795a840155703e",
    "hm_psi": "2f0f055cea4f1083f4ef127ece48d71606347f6557dbb961c0ca5740a2da485b",
    "if_sara": "6c0b253b955fe32f1a1a86006aebe83d050ea95afd0e7be15182f087deedbf55",
    "im_nicola": "234ed06648649f9bd874b37508ea17560b9c993ef85b4ddb3e3a71e062bd2c12",
    "jf_alpha": "1bf4c9dc69e45ee46183b071f4db766349aac5592acbcfeaf051018048a5d787",
    "jf_gongitsune": "1b171917f18f351e65f2bf9657700cd6bfec4e65589c297525b9cf3c20105770",
    "jf_nezumi": "d83f007a7f01783b77014561a7d493d327a0210e143440e91c9b697590d27661",
    "jf_tebukuro": "0d6917904438aec85f73a6fa1f7ac2be6481aae47c697834936930a91796c576",
    "jm_kumo": "98340afd68b1cee84fe0cd95528cfa6d4b39e416aa75a9df64049d52c8b55896",
    "pf_dora": "07e4ff987c5d5a8c3995efd15cc4f0db7c4c15e881b198d8ab7f67ecf51f5eb7",
    "pm_alex": "cf0ba8c573c2480fc54123683a35cf1e2ae130428e441eb91f9149bdb188a526",
    "pm_santa": "d42103169c5c872abbafb9129133af7e942bb9d272c3cc3b95c203e7d7198c29",
    "zf_xiaobei": "9b76be63dab4f4f96962030acc0126a9aee9728608fbbe115e2b58a2bd504df6",
    "zf_xiaoni": "95b49f169bf1640f4f43c25e13daa39f7b98d15d00823e83ef5c14b3ced59e49",
    "zf_xiaoxiao": "cfaf6f2ded1ee56f1ff94fcd2b0e6cdf32e5b794bdc05b44e7439d44aef5887c",
    "zf_xiaoyi": "b5235dbaeef85a4c613bf78af9a88ff63c25bac5f26ba77e36186d8b7ebf05e2",
    "zm_yunjian": "76cbf8bad35901d011d9628a2fdceb7b4f1f127e7a3269cb393b3941eb7fc417",
    "zm_yunxi": "dbe6e1ce7c3dbaf2f5667432947b638b1c6831ccbe154c4610dbcc44f431e27b",
    "zm_yunxia": "bb2b03b08e84d64e1214440ce3b624987fac177f2eeb5bab8571799a3d980acd",
    "zm_yunyang": "5238ac22e0c7f8b6cdd2eddd6e444b8a700b73c4674d9a047d59a94ff96379a2",
}
"""SHA-256 of each official Kokoro-82M v1.0 voice pack file, ``voices/<name>.pt`` in ``hexgrad/Kokoro-82M``."""

OFFICIAL_TABLE_SHA256: Mapping[str, str] = {
    "af_alloy": "c4a6b876047fd7fb472edf4ebd63cfac7c3b958a7cae7c106e8f038ca6308c45",
    "af_aoede": "4a004c33430762e2461eedb2013fad808ef4ab3121f5300f554476caf58d8361",
    "af_bella": "f69d836209b78eb8c66e75e3cda491e26ea838a3674257e9d4e5703cbaf55c8b",
    "af_heart": "d583ccff3cdca2f7fae535cb998ac07e9fcb90f09737b9a41fa2734ec44a8f0b",
    "af_jessica": "a240a5e3c15b43563d6e923bdca8ef5613a23471d9b77653694012435df23bd8",
    "af_kore": "9be5221b6a941c04b561959b8ff0b06e809444dcc4ab7e75a7b23606f691819e",
    "af_nicole": "cd2191ab31b914ed7b318416b0e4440fdf392ddad9106a060819aa600a64f59a",
    "af_nova": "18778272caa0d0eebaea251c35fd635f038434f9eee5e691d02a174bd328414f",
    "af_river": "00a2bcf82b1d86e8f19902ede58c65ccf6c0e43b44b7d74fad54e5d8933c9c30",
    "af_sarah": "4409fbc125afabacc615d94db5398d847006a737b0247d6892b7a9a0007a2f0a",
    "af_sky": "4435255c9744f3f31659e0d714ab7689bf65d9e77ec1cce060f083912614f0b9",
    "am_adam": "162b035ed91cfc48b6046982184c645f72edcdd1b82843347f605d7bf7b15716",
    "am_echo": "3968b92c3c4cd1c4416dbded36c13eaa388a90d5788d02a13e4d781f5f8cf3c3",
    "am_eric": "e8b5be17edd1e3636901ce7598baafe2dc8dd8ff707a0c23bf9e461add7e2832",
    "am_fenrir": "c27989f741f7ee34d273a39d8a595cc0837d35f5ced9a29b7cc162614616df43",
    "am_liam": "52403be32fd047c6a44517cb0bcd6b134f2a18baa73e70ef41651e0eab921ade",
    "am_michael": "1d1f21dd8da39c30705cd4c75d039d265e9bc4a2a93ed09bc9e1b1225eb95ba1",
    "am_onyx": "da5d135b424164916d75a68ffb4c2abce3d7d5ccc82dd1ee6cf447ce286145e6",
    "am_puck": "fcf73c989033e9233e0b98713eca600c8c74dcc1614b37009d5450ff4a2274a0",
    "am_santa": "61150cf726ab6c5ed7a99f90a304f91f5a72c00c592e89ec94e5df11c319227a",
    "bf_alice": "08afa6ba24da61ea5e8efa139e5aadc938d83f0a6da5a900adaf763ac1da5573",
    "bf_emma": "669fe0647f9dd04fcab92f1439a40eeb4c8b4ab1f82e4996fe3d918ce4a63b73",
    "bf_isabella": "3754352c4aaa46d17f27654ab7518d65b62ad6163a0f55a5f4330c2da2c4e94f",
    "bf_lily": "5e0ee32ebe64a467124976b14e69590746f1c4ce41a12b587a50c862edfea335",
    "bm_daniel": "6b3194bbceffb746733cbc22c8f593dd44e401a71d53895a2dca891bc595a1e8",
    "bm_fable": "f889083196807b4adb15e9204252165f503b8d33d3982e681c52443c49d798f1",
    "bm_george": "c4b235a4c1f2cd3b939fed08b899ce9385638b763f7b73a59616c4fc9bd6c9bc",
    "bm_lewis": "b8f671cef828c30e66fdf0b0756a76bba58f6bb3398cbbf27058642acbcedb97",
    "ef_dora": "f66ec66bd295acb18372e37008533a9a3228483ccd294e7538d5d9294ac9a532",
    "em_alex": "27809e9eafdcbcfff90a3016c697568676531de2a2c39cee29c96c7bd6b83e95",
    "em_santa": "ad43b774e1ca24d05c6161297d8aeb770ac3d29bb95daf516727af5f7d543683",
    "ff_siwis": "a35f5675ad08948e326ae75fd0ea16ba5d0042e4f76b5f3d1df77d0a48c54861",
    "hf_alpha": "040be6a4425411cc01fda5fd06693c76bfa78572632852bc8cda9c99232ffb56",
    "hf_beta": "cd83ae0bb9b2e4e4fb92b4973bd8d1822ca0036d3c498bf4fc89aa8e33917cc7",
    "hm_omega": "b02d9222d9ed00ce26b302173a862c2c93f96cc40b5c422b8d14910b9ff34137",
    "hm_psi": "644daf88ba8aeb7bd08950bbdcd4453bb280864e49dc4df93fabc6be32e03f37",
    "if_sara": "409b69248798fcdc2542330c76953d230710f19b057e59cb82fdc3c4cf71265c",
    "im_nicola": "bc578e510d52a96d6940d46f12e96d7b3df00905dbea075113226d100e6e1ab0",
    "jf_alpha": "56b479360aad9f367aeb8cef908f9201cf48b4555e488c5f4590c9dfcd978bb6",
    "jf_gongitsune": "0f1181f3772d27b7c12aaf4bcd71e31b186c4146e330d074a3dc64ee392af396",
    "jf_nezumi": "13cb71eebb0b48739d444558322aa35a8c9a489b80e1e631f14d2e6aea93026b",
    "jf_tebukuro": "29c6c0561b4288d59639677bebe7533c919743d5ea68d0d2ae992644beea6696",
    "jm_kumo": "09e959d239724c734d65661f06f14cdabcddfd476bfaaad905a937099ae9e64f",
    "pf_dora": "3da7b5b2d91847ebf5646f57631af6ececae3c29a89cd300f06edf9aa6cfe9ee",
    "pm_alex": "0175c753f59c54e7fd5a995bedef0c5ff2fb67e0043dd3dcb2ae74ec2acbeb2a",
    "pm_santa": "8b012db3185778afe2e45a62cbad69db73021774fe68dda634bcc748a982eede",
    "zf_xiaobei": "5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640",
    "zf_xiaoni": "08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba",
    "zf_xiaoxiao": "03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169",
    "zf_xiaoyi": "bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3",
    "zm_yunjian": "de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa",
    "zm_yunxi": "7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b",
    "zm_yunxia": "6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d",
    "zm_yunyang": "261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42",
}
"""SHA-256 of each official pack's float32 table (its ``.pt``'s ``data/0`` entry, ``[510, 1, 256]`` little-endian):
the same voice taken from ``voices-v1.0.bin`` or an ``.npz`` is checked against this."""

ENGLISH_VOICES: tuple[str, ...] = tuple(sorted(name for name in OFFICIAL_SHA256 if name[0] in "ab"))
"""The official American and British English voices (what ``kokoro-server voices fetch`` gets by default)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def table_sha256(table: FloatArray) -> str:
    """The SHA-256 of a ``[510, 256]`` (or ``[510, 1, 256]``) table as little-endian float32 bytes."""
    return sha256_hex(np.ascontiguousarray(table, dtype="<f4").tobytes())


def as_table(name: str, array: npt.NDArray[np.generic], source: Path | str) -> FloatArray:
    """Validate one voice table and return it as a read-only ``[510, 256]`` float32 array."""
    if array.ndim == 3 and array.shape[1] == 1:
        array = array[:, 0, :]
    if array.ndim != 2 or array.shape != (STYLE_ROWS, STYLE_DIM):
        raise ModelFilesError(
            f"voice {name!r} in {source} has shape {tuple(array.shape)}, expected ({STYLE_ROWS}, 1, {STYLE_DIM}): "
            "use a Kokoro v1.0 voice pack"
        )
    table = np.ascontiguousarray(array, dtype=np.float32)
    if not np.isfinite(table).all():
        raise ModelFilesError(f"voice {name!r} in {source} contains NaN or infinity: replace the voice file")
    table.setflags(write=False)
    return table


def _pickled_tensor(pickled: bytes, source: Path | str) -> tuple[str, int, int, tuple[int, ...], tuple[int, ...]]:
    """(storage type, storage elements, offset, shape, stride) of a tensor's pickle, read opcode by opcode.

    ``torch.save`` pickles ``_rebuild_tensor_v2(persistent_id(('storage', torch.FloatStorage, key, location,
    numel)), offset, size, stride, ...)``: the storage tuple comes before the persistent-id opcode, then the offset,
    the size tuple and the stride tuple as integers."""
    try:
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(pickled)]
    except ValueError as exc:
        raise ModelFilesError(
            f"{source} is not a PyTorch tensor archive ({exc}): use a Kokoro v1.0 voice pack"
        ) from exc
    storage_types = [arg for name, arg in ops if name in {"GLOBAL", "INST"} and str(arg).endswith("Storage")]
    persid = next((i for i, (name, _) in enumerate(ops) if name in {"BINPERSID", "PERSID"}), None)
    if persid is None or len(storage_types) != 1:
        raise ModelFilesError(f"{source} does not hold one tensor: use a Kokoro v1.0 voice pack")
    before = [arg for name, arg in ops[:persid] if name.startswith(("BININT", "INT", "LONG")) and isinstance(arg, int)]
    groups: list[list[int]] = [[]]
    for name, arg in ops[persid + 1 :]:
        if name.startswith(("BININT", "INT", "LONG")) and isinstance(arg, int):
            groups[-1].append(arg)
        elif name.startswith("TUPLE") or name == "EMPTY_TUPLE":
            groups.append([])
        elif name in {"NEWFALSE", "NEWTRUE", "GLOBAL", "STACK_GLOBAL"}:
            break
    if not before or len(groups) < 3 or len(groups[0]) < 1:
        raise ModelFilesError(f"{source} does not hold one tensor: use a Kokoro v1.0 voice pack")
    offset, *shape = groups[0]
    stride = groups[1]
    return str(storage_types[0]), before[-1], offset, tuple(shape), tuple(stride)


def read_pt(path: Path) -> FloatArray:
    """The ``[510, 256]`` table of one ``.pt`` voice pack, read from its archive's ``<folder>/data/0`` entry
    without unpickling anything.

    Raises:
        ModelFilesError: not a zip, not one float32 tensor, not contiguous ``[510, 1, 256]`` (or ``[510, 256]``).
    """
    try:
        with zipfile.ZipFile(path) as archive:
            entries = {PurePosixPath(info.filename): info for info in archive.infolist()}
            storages = [p for p in entries if len(p.parts) == 3 and p.parts[1] == "data"]
            pickles = [p for p in entries if len(p.parts) == 2 and p.name == "data.pkl"]
            if len(storages) != 1 or len(pickles) != 1 or storages[0].parent.parent != pickles[0].parent:
                raise ModelFilesError(f"{path} does not hold one tensor: use a Kokoro v1.0 voice pack")
            folder = pickles[0].parent
            byteorder = folder / "byteorder"
            if byteorder in entries and archive.read(str(byteorder)).strip() != b"little":
                raise ModelFilesError(f"{path} is stored big-endian: use a Kokoro v1.0 voice pack")
            storage_type, numel, offset, shape, stride = _pickled_tensor(archive.read(str(pickles[0])), path)
            data = archive.read(str(storages[0]))
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise ModelFilesError(f"cannot read voice {path} ({exc}): use a Kokoro v1.0 voice pack") from exc
    name = path.stem
    if not storage_type.endswith("FloatStorage"):
        raise ModelFilesError(f"voice {name!r} in {path} holds {storage_type}, not float32: use a Kokoro v1.0 pack")
    contiguous = tuple(int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape)))
    if shape not in {(STYLE_ROWS, 1, STYLE_DIM), (STYLE_ROWS, STYLE_DIM)} or offset != 0:
        raise ModelFilesError(
            f"voice {name!r} in {path} has shape {shape}, expected ({STYLE_ROWS}, 1, {STYLE_DIM}): "
            "use a Kokoro v1.0 voice pack"
        )
    if stride != contiguous or numel * 4 != TABLE_BYTES or len(data) != TABLE_BYTES:
        raise ModelFilesError(f"voice {name!r} in {path} is not a contiguous float32 table: use a Kokoro v1.0 pack")
    return as_table(name, np.frombuffer(data, dtype="<f4").reshape(STYLE_ROWS, STYLE_DIM), path)


def read_archive(path: Path) -> dict[str, FloatArray]:
    """Every voice of an ``.npz``-format archive (``voices_ja.npz``, kokoro-onnx's ``voices-v1.0.bin``)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: as_table(name, archive[name], path) for name in archive.files}
    except (OSError, ValueError) as exc:
        raise ModelFilesError(f"cannot read voices from {path} ({exc}): use an .npz or voices-v1.0.bin") from exc


def read_npy(path: Path) -> FloatArray:
    """One voice saved as ``<name>.npy`` (what ``voices install`` writes for a pack taken from an archive)."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelFilesError(f"cannot read voice {path} ({exc}): install it again") from exc
    return as_table(path.stem, array, path)


def read_pack_dir(path: Path) -> dict[str, FloatArray]:
    """Every voice of a directory: ``<name>.pt`` (upstream layout) and ``<name>.npy``; a ``.pt`` wins a tie."""
    packs: dict[str, FloatArray] = {}
    for file in sorted(path.glob("*.npy")):
        packs[file.stem] = read_npy(file)
    for file in sorted(path.glob("*.pt")):
        packs[file.stem] = read_pt(file)
    return packs


def read_packs(path: Path) -> dict[str, FloatArray]:
    """The voices at ``path``: a directory of packs, one ``.pt`` or ``.npy``, or an ``.npz``-format archive."""
    if path.is_dir():
        packs = read_pack_dir(path)
        if not packs:
            raise ModelFilesError(f"no voice files (*.pt, *.npy) in {path}: point at a directory of voice packs")
        return packs
    if path.suffix == ".pt":
        return {path.stem: read_pt(path)}
    if path.suffix == ".npy":
        return {path.stem: read_npy(path)}
    return read_archive(path)


# --------------------------------------------------------------------------------------------------------------
# What a voice is, and whether it is official
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VoiceFacts:
    """One voice as ``kokoro-server voices list`` shows it."""

    name: str
    language: str
    """``en-us``, ``ja``, … from the name's first letter; ``unknown`` otherwise."""
    gender: str
    """``female``, ``male`` or ``unknown`` from the name's second letter."""
    official: bool
    """An official v1.0 name whose table matches the pinned digest."""
    source: str
    """``embedded`` or ``installed``."""


def language_of(name: str) -> str:
    """The code of the language a voice name says it was trained on (:func:`relay_core.languages.language_of_voice`),
    or ``unknown``."""
    language = language_of_voice(name)
    return language.code if language is not None else "unknown"


def gender_of(name: str) -> str:
    prefix = name.split("_", 1)[0] if "_" in name else ""
    return GENDER_NAMES.get(prefix[1:2], "unknown") if len(prefix) == 2 else "unknown"


def is_official(name: str, table: FloatArray) -> bool:
    """Whether ``name`` is an official voice and ``table`` is its pinned table, bit for bit."""
    expected = OFFICIAL_TABLE_SHA256.get(name)
    return expected is not None and table_sha256(table) == expected


def describe(name: str, table: FloatArray, source: str) -> VoiceFacts:
    return VoiceFacts(name, language_of(name), gender_of(name), is_official(name, table), source)


def check_official(name: str, table: FloatArray, source: Path | str) -> None:
    """Refuse a pack of an official name whose table is not the pinned one (one line, the digests in it)."""
    expected = OFFICIAL_TABLE_SHA256.get(name)
    if expected is None:
        return
    actual = table_sha256(table)
    if actual != expected:
        raise ModelFilesError(
            f"{source}: voice {name!r} has SHA-256 {actual} (of its float32 table), the official pack's is "
            f"{expected}: refused"
        )


def check_official_file(name: str, data: bytes, source: str) -> None:
    """Refuse a downloaded ``<name>.pt`` whose SHA-256 is not the pinned one (one line, both digests)."""
    expected = OFFICIAL_SHA256[name]
    actual = sha256_hex(data)
    if actual != expected:
        raise ModelFilesError(
            f"{source}: SHA-256 {actual}, expected {expected} (the official {name}.pt): refused, nothing installed"
        )


def installed_packs(directory: Path) -> dict[str, FloatArray]:
    """The packs installed in ``directory`` (the cache's ``voices/``); none when it does not exist."""
    return read_pack_dir(directory) if directory.is_dir() else {}


def default_voice_of(names: Iterable[str]) -> str:
    """The voice :data:`PREFERRED_DEFAULT_VOICES` picks among ``names`` (which must not be empty)."""
    available = sorted(set(names))
    return next((voice for voice in PREFERRED_DEFAULT_VOICES if voice in available), available[0])
